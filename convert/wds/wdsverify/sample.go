package wdsverify

import (
	"regexp"
	"strings"
)

// WebDataset groups a shard's members into samples by name: the sample key
// is everything up to the first dot of the last path element, the field
// the rest (webdataset's base_plus_ext); names of the form __x__ are
// metadata, in no sample.
var (
	sampleName   = regexp.MustCompile(`^((?:.*/|)[^.]+)[.]([^/]*)$`)
	metadataName = regexp.MustCompile(`^__[^/]*__($|/)`)
)

// sampleField returns a member path's sample key and field (lower-cased);
// ok is false for a name in no sample or with an empty field.
func sampleField(name string) (field, sample string, ok bool) {
	if metadataName.MatchString(name) {
		return "", "", false
	}
	m := sampleName.FindStringSubmatch(name)
	if m == nil || m[2] == "" {
		return "", "", false
	}
	return strings.ToLower(m[2]), m[1], true
}

package wds

import (
	"errors"
	"path"
	"regexp"
	"strings"

	"github.com/bpconvert/bpconvert/packcore"
)

// memberKey turns a tar member name into a pack key: every leading "./" is
// removed, and with a shard prefix the shard's stem and a "/" go first.
// Absolute names and names with a ".." element are refused as unsafe;
// anything else packcore cannot store is refused with its reason.
func memberKey(name, prefix string) (string, error) {
	k := StripDot(name)
	if strings.HasPrefix(k, "/") {
		return "", errors.New("unsafe member name: absolute path")
	}
	for _, el := range strings.Split(k, "/") {
		if el == ".." {
			return "", errors.New("unsafe member name: a \"..\" element leads out of the shard")
		}
	}
	if k == "" {
		return "", errors.New("unusable member name: empty")
	}
	if prefix != "" {
		k = prefix + "/" + k
	}
	if err := packcore.ValidateKey(k); err != nil {
		var ke *packcore.KeyError
		if errors.As(err, &ke) {
			return "", errors.New("unusable member name: " + ke.Reason)
		}
		return "", err
	}
	return k, nil
}

// StripDot removes every leading "./" (and the slashes after it) from a tar
// member name, as the converter does before it makes the member's key.
func StripDot(name string) string {
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	return name
}

// symlinkTarget resolves a symbolic link's target against the link's own
// directory, as a member name. ok is false when the target is absolute or
// leads out of the shard.
func symlinkTarget(name, target string) (string, bool) {
	if target == "" || strings.HasPrefix(target, "/") {
		return "", false
	}
	p := path.Join(path.Dir(StripDot(name)), target)
	if p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return "", false
	}
	return p, true
}

// wdsName is WebDataset's split of a member name into sample key and field
// (webdataset's tariterators.base_plus_ext): everything up to the first dot
// of the last path element, and the rest.
var wdsName = regexp.MustCompile(`^((?:.*/|)[^.]+)[.]([^/]*)$`)

// wdsMeta matches names that WebDataset skips as metadata (its skip_meta).
var wdsMeta = regexp.MustCompile(`^__[^/]*__($|/)`)

// SplitSample splits a pack key (without shard prefix) into WebDataset's
// sample key and lower-cased field. ok is false for names that WebDataset
// leaves out of every sample: no dot in the last element, or metadata names
// such as __index__.
func SplitSample(key string) (sample, field string, ok bool) {
	if wdsMeta.MatchString(key) {
		return "", "", false
	}
	m := wdsName.FindStringSubmatch(key)
	if m == nil {
		return "", "", false
	}
	return m[1], strings.ToLower(m[2]), true
}

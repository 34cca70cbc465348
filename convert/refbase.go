package convert

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/bpconvert/bpconvert/packcore"
)

// RefBaseOption is the option (--ref-base, recorded in a run's Record)
// that says what references call the destination: see CheckRefBase.
const RefBaseOption = "ref-base"

// CheckRefBase validates and normalises a reference base, what references
// name the dataset root by, so that they read
// zip://KEY::<base>/media/pack-NNNN.zip:
//
//   - "" or ".": the default, relative to the dataset root
//     (zip://KEY::media/pack-NNNN.zip), read from the root;
//   - a relative path that says so (./ds, ../ds): relative to the
//     directory readers work in;
//   - an absolute path (/data/ds): readable from any directory;
//   - a URL (s3://bucket/ds, https://host/ds): where the dataset is read
//     from once it is moved there.
//
// It refuses what no reference can carry: "::" (which ends a reference's
// key), control characters, backslashes, surrounding spaces and a URL with
// nothing after its scheme; and a bare relative path (other, data/ds),
// which reads like a name of the dataset but resolves from whatever
// directory a reader happens to work in. The result is "" for the default.
func CheckRefBase(base string) (string, error) {
	if base == "" {
		return "", nil
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("--ref-base %q: %s", base, why)
	}
	switch {
	case strings.TrimSpace(base) != base:
		return bad("starts or ends with white space")
	case strings.Contains(base, "::"):
		return bad(`contains "::", which ends a reference's key`)
	case strings.Contains(base, `\`):
		return bad("contains a backslash; references use / between directories")
	case strings.ContainsFunc(base, unicode.IsControl):
		return bad("contains a control character")
	}
	if scheme, rest, ok := packcore.SplitURL(base); ok {
		if strings.Trim(rest, "/") == "" {
			return bad("names no location after " + scheme)
		}
		if strings.Contains(rest, "?") || strings.Contains(rest, "#") {
			return bad("a URL with a query or a fragment cannot be followed by the shard's path")
		}
		return packcore.CleanRefBase(base), nil
	}
	if strings.Contains(base, "://") {
		return bad("is neither a path nor a URL (scheme://location)")
	}
	explicit := base == "." || base == ".." || strings.HasPrefix(base, "./") || strings.HasPrefix(base, "../")
	if !path.IsAbs(base) && !explicit {
		return bad(RefBaseForms)
	}
	return packcore.CleanRefBase(base), nil
}

// RefBaseForms says which forms --ref-base takes, for the message that
// refuses another.
const RefBaseForms = "a bare relative path resolves from whatever directory a reader works in; " +
	"give an absolute path (/data/ds), a URL (s3://bucket/ds, https://host/ds), " +
	"or a path relative to the readers' directory that starts with ./ or ../ (./ds, ../ds)"

// RefBaseHelp describes --ref-base for a converter's --help.
const RefBaseHelp = "what references call the dataset root, `BASE` in zip://KEY::BASE/media/pack-NNNN.zip:\n" +
	"relative to the dataset root by default (zip://KEY::media/pack-NNNN.zip: read from the root);\n" +
	"an absolute path (/data/ds: readable from any directory, the dataset must stay there),\n" +
	"a URL (s3://bucket/ds, https://host/ds: where the dataset will be read from), or\n" +
	"a path relative to the readers' directory, starting with ./ or ../ (../ds).\n" +
	"verify, ls and cat resolve such references against the dataset they are given"

// refDir returns the pack directory as references name it: packDir
// below base ("" for the dataset root itself).
func refDir(base, packDir string) string {
	if base == "" {
		return packDir
	}
	return packcore.JoinShardPath(base, packDir)
}

// errNotRefDir is wrapped when a reference names a shard outside the pack
// directory its run wrote.
var errNotRefDir = errors.New("names a shard outside the pack directory")

// shardIn returns the key and shard file name of ref, checking that it
// names a shard in dir (the pack directory as references name it).
func shardIn(ref, dir string) (key, file string, err error) {
	key, shard, err := packcore.ParseRef(ref)
	if err != nil {
		return "", "", err
	}
	d, file := path.Split(shard)
	if packcore.CleanRefBase(d) != packcore.CleanRefBase(dir) {
		return "", "", fmt.Errorf("reference %q %w %s/", ref, errNotRefDir, dir)
	}
	return key, file, nil
}

// RefNote is the plan note that says where the output's references resolve
// from: relative to the dataset root by default, or from what --ref-base
// names.
func (o PackOptions) RefNote() string {
	if o.RefBase == "" {
		// One line of a plan: what readers that resolve paths from their
		// working directory need is in the README and docs/reading.md.
		return "References resolve from the dataset root, wherever it moves; for datasets or fsspec in any directory: bpconvert rebase DST --ref-base /absolute/path/of/DST"
	}
	ex := "zip://KEY::" + refDir(o.RefBase, MediaDir) + "/pack-NNNN.zip"
	where := "a reader resolves them from any directory while the dataset stays at " + o.RefBase +
		" (after a move, bpconvert rebase DST --ref-base NEW rewrites them, tables only)"
	if _, _, ok := packcore.SplitURL(o.RefBase); ok {
		where = "a reader resolves them once the dataset is at " + o.RefBase + " (fsspec opens such a URL with the file system of its scheme, s3fs for s3://)"
	} else if !path.IsAbs(o.RefBase) {
		where = "relative to the directory a reader works in, not to the dataset root"
	}
	return "References name the dataset root as " + o.RefBase + " (--ref-base): " + ex + "; " + where +
		". bpconvert verify, ls and cat resolve them against the dataset they are given, wherever it is."
}

package packcore

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// RefScheme prefixes every blob reference.
const RefScheme = "zip://"

// ErrNotRef is wrapped when a string is not a blob reference.
var ErrNotRef = errors.New("not a blob reference")

// FormatRef builds the reference zip://KEY::SHARDPATH. shardPath is the
// shard's path relative to the dataset root, e.g. "media/pack-0000.zip".
func FormatRef(key, shardPath string) string {
	return RefScheme + key + "::" + shardPath
}

// JoinShardPath joins a reference base and a shard file name the way
// references spell them: "media" + "pack-0000.zip" → "media/pack-0000.zip",
// and an empty base yields the bare shard name.
func JoinShardPath(refBase, shard string) string {
	if refBase == "" {
		return shard
	}
	return path.Join(refBase, shard)
}

// CleanRefBase normalises a reference base as references spell it: POSIX
// separators, "." for nothing becomes "", "./media" becomes "media".
func CleanRefBase(base string) string {
	if base == "" {
		return ""
	}
	c := path.Clean(strings.ReplaceAll(base, `\`, "/"))
	if c == "." {
		return ""
	}
	return c
}

// ParseRef splits a reference into its member key and shard path. It accepts
// exactly the strings FormatRef produces: the zip:// scheme, a non-empty key,
// the first "::" after the scheme, and a non-empty shard path.
func ParseRef(ref string) (key, shardPath string, err error) {
	rest, ok := strings.CutPrefix(ref, RefScheme)
	if !ok {
		return "", "", fmt.Errorf("%w: %q", ErrNotRef, ref)
	}
	key, shardPath, ok = strings.Cut(rest, "::")
	if !ok || key == "" || shardPath == "" {
		return "", "", fmt.Errorf("%w: %q", ErrNotRef, ref)
	}
	return key, shardPath, nil
}

// IsRef reports whether s looks like a blob reference (starts with zip://).
func IsRef(s string) bool { return strings.HasPrefix(s, RefScheme) }

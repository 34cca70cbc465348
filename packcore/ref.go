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
// "s3://bucket/ds/media" + "pack-0000.zip" → "s3://bucket/ds/media/pack-0000.zip",
// and an empty base yields the bare shard name.
func JoinShardPath(refBase, shard string) string {
	if refBase == "" {
		return shard
	}
	if scheme, rest, ok := SplitURL(refBase); ok {
		return scheme + path.Join(rest, shard)
	}
	return path.Join(refBase, shard)
}

// CleanRefBase normalises a reference base as references spell it: POSIX
// separators, "." for nothing becomes "", "./media" becomes "media"; a URL
// (s3://bucket/ds/, https://host/ds) keeps its scheme and loses a trailing
// slash.
func CleanRefBase(base string) string {
	if base == "" {
		return ""
	}
	if scheme, rest, ok := SplitURL(base); ok {
		if c := path.Clean(rest); c != "." && c != "/" {
			return scheme + strings.TrimPrefix(c, "/")
		}
		return scheme
	}
	c := path.Clean(strings.ReplaceAll(base, `\`, "/"))
	if c == "." {
		return ""
	}
	return c
}

// SplitURL splits a URL such as s3://bucket/ds into its scheme with the
// "://" ("s3://") and the rest ("bucket/ds"); ok is false for anything that
// does not start with a scheme (letters, digits, +, - and . after a first
// letter) and "://", such as a local path.
func SplitURL(s string) (scheme, rest string, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", "", false
	}
	for j, c := range s[:i] {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return s[:i+3], s[i+3:], true
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

package dsverify

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// This file reads a WebDataset source for verify --against on its own,
// from the format's conventions, not through convert/wds: which files are
// shards, how a shard list is written and how a tar is compressed (how a
// member name splits into sample key and field is convert-wds's comparison's,
// in convert/wds/wdsverify). A converter that misread a source would
// otherwise agree with itself. The comparison of packs made from shards
// (against_packs.go) reads shards too, so the tar reader is here, and
// CompareShards exports it.

// tarEndings are the file name endings of tar shards, compressed or not
// (in any case), longest first, so that a shard's stem loses its whole
// ending.
var tarEndings = []string{
	".tar.zstd", ".tar.bz2", ".tar.zst", ".tar.gz", ".tar.xz",
	".tbz2", ".tzst", ".tar", ".tgz", ".tbz", ".txz",
}

// tarEnding returns the ending of name that marks a tar shard, "" when it
// has none (the ending alone is no shard name).
func tarEnding(name string) string {
	lower := strings.ToLower(name)
	for _, e := range tarEndings {
		if len(lower) > len(e) && strings.HasSuffix(lower, e) {
			return e
		}
	}
	return ""
}

// isTarName reports whether a file name ends like a tar shard.
func isTarName(name string) bool { return tarEnding(name) != "" }

// tarStem is a shard's file name without its tar ending (without its last
// extension for another name): what --shard-prefix put before the keys of
// the shard's members.
func tarStem(p string) string {
	base := path.Base(filepath.ToSlash(p))
	if e := tarEnding(base); e != "" {
		return base[:len(base)-len(e)]
	}
	if ext := path.Ext(base); ext != "" && len(ext) < len(base) {
		return base[:len(base)-len(ext)]
	}
	return base
}

// memberPath is a tar member's name as a path in the shard: every leading
// "./" (and the slashes after it) removed.
func memberPath(name string) string {
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	return name
}

// openTar returns the tar stream of a shard, decompressed as its first
// bytes say (gzip, bzip2, xz or zstd; none), the compression's name, and a
// function that frees the decompressor.
func openTar(br *bufio.Reader) (io.Reader, string, func(), error) {
	magic, _ := br.Peek(6)
	none := func() {}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br) // every member of a multi-member file
		if err != nil {
			return nil, "gzip", none, err
		}
		return zr, "gzip", func() { zr.Close() }, nil
	case len(magic) >= 4 && bytes.HasPrefix(magic, []byte("BZh")) && magic[3] >= '1' && magic[3] <= '9':
		return bzip2.NewReader(br), "bzip2", none, nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		xr, err := xz.NewReader(br)
		if err != nil {
			return nil, "xz", none, err
		}
		return xr, "xz", none, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}),
		// a zstd skippable frame (magic 0x184D2A50 to 0x184D2A5F) first
		len(magic) >= 4 && magic[0]&0xf0 == 0x50 && bytes.Equal(magic[1:4], []byte{0x2a, 0x4d, 0x18}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, "zstd", none, err
		}
		return zr, "zstd", zr.Close, nil
	}
	return br, "uncompressed", none, nil
}

// maxShardNames bounds what one shard list expands to, so a mistyped range
// fails instead of exhausting memory.
const maxShardNames = 1_000_000

// expandShardList expands a shard list as WebDataset users write one:
// patterns joined by "::" (empty ones skipped), each with bash-style
// braces as Python's braceexpand expands them.
func expandShardList(spec string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(spec, "::") {
		if p == "" {
			continue
		}
		names, err := expandBraces(p)
		if err != nil {
			return nil, fmt.Errorf("shard pattern %q: %w", spec, err)
		}
		if out = append(out, names...); len(out) > maxShardNames {
			return nil, fmt.Errorf("shard pattern %q: more than %d names", spec, maxShardNames)
		}
	}
	return out, nil
}

// expandBraces expands one brace pattern: {a,b} alternatives (nested, may
// be empty), {1..10} and {10..1..2} integer ranges (a bound written with a
// leading zero pads all to the longer bound's width; the step's sign is
// ignored), {a..e} letter ranges over A-Z then a-z, a group that is none of
// these kept with its braces (its inside expanded), a backslash making the
// next character literal; unbalanced braces are an error.
func expandBraces(p string) ([]string, error) {
	out, err := expandSeq(p)
	if err != nil {
		return nil, err
	}
	for i, s := range out {
		out[i] = unescapeBraces(s)
	}
	return out, nil
}

// closingBrace returns the index of the brace that closes the one at
// p[open], -1 when there is none.
func closingBrace(p string, open int) int {
	depth := 0
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// expandSeq expands a run of text and brace groups, escapes kept.
func expandSeq(p string) ([]string, error) {
	out := []string{""}
	lit := 0 // start of the literal text not yet added
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '}':
			return nil, errors.New("unbalanced braces")
		case '{':
			end := closingBrace(p, i)
			if end < 0 {
				return nil, errors.New("unbalanced braces")
			}
			alts, err := expandGroup(p[i+1 : end])
			if err != nil {
				return nil, err
			}
			out = cross(cross(out, []string{p[lit:i]}), alts)
			if len(out) > maxShardNames {
				return nil, fmt.Errorf("more than %d names", maxShardNames)
			}
			i, lit = end, end+1
		}
	}
	return cross(out, []string{p[min(lit, len(p)):]}), nil
}

// expandGroup expands the inside of one brace group.
func expandGroup(in string) ([]string, error) {
	if r, ok := braceRange(in); ok {
		return r, nil
	}
	var parts []string
	depth, from := 0, 0
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts, from = append(parts, in[from:i]), i+1
			}
		}
	}
	if parts == nil { // no list: the braces stay
		inner, err := expandSeq(in)
		if err != nil {
			return nil, err
		}
		for i, s := range inner {
			inner[i] = "{" + s + "}"
		}
		return inner, nil
	}
	var out []string
	for _, part := range append(parts, in[from:]) {
		names, err := expandSeq(part)
		if err != nil {
			return nil, err
		}
		if out = append(out, names...); len(out) > maxShardNames {
			return nil, fmt.Errorf("more than %d names", maxShardNames)
		}
	}
	return out, nil
}

var (
	intRangeRE    = regexp.MustCompile(`^(-?[0-9]+)\.\.(-?[0-9]+)(?:\.\.-?([0-9]+))?$`)
	letterRangeRE = regexp.MustCompile(`^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?([0-9]+))?$`)
)

// letters is the alphabet of letter ranges.
const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// braceRange expands a range group's inside; ok is false for another.
func braceRange(in string) ([]string, bool) {
	if m := intRangeRE.FindStringSubmatch(in); m != nil {
		from, err1 := strconv.Atoi(m[1])
		to, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			return nil, false
		}
		width := 0
		for _, b := range m[1:3] {
			if b != "0" && b != "-0" && (strings.HasPrefix(b, "0") || strings.HasPrefix(b, "-0")) {
				width = max(len(m[1]), len(m[2]))
			}
		}
		var out []string
		for _, i := range steps(from, to, m[3]) {
			out = append(out, fmt.Sprintf("%0*d", width, i))
		}
		return out, true
	}
	if m := letterRangeRE.FindStringSubmatch(in); m != nil {
		var out []string
		for _, i := range steps(strings.IndexByte(letters, m[1][0]), strings.IndexByte(letters, m[2][0]), m[3]) {
			out = append(out, letters[i:i+1])
		}
		return out, true
	}
	return nil, false
}

// steps counts from from to to, both included, by step (1 when empty or
// 0), up or down as the bounds say; at most maxShardNames+1 values.
func steps(from, to int, step string) []int {
	by, _ := strconv.Atoi(step)
	if by <= 0 {
		by = 1
	}
	var out []int
	if from <= to {
		for i := from; i <= to && len(out) <= maxShardNames; i += by {
			out = append(out, i)
		}
		return out
	}
	for i := from; i >= to && len(out) <= maxShardNames; i -= by {
		out = append(out, i)
	}
	return out
}

// cross returns every a followed by every b, b varying fastest.
func cross(as, bs []string) []string {
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, a+b)
		}
	}
	return out
}

// unescapeBraces removes each escaping backslash.
func unescapeBraces(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

package wds

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadPattern is wrapped by every error about a shard pattern that cannot
// be expanded: unbalanced braces, or an expansion that would list more than
// MaxExpansions names. It is a mistake in the command line, not in the data.
var ErrBadPattern = errors.New("invalid shard pattern")

// MaxExpansions caps how many names one shard pattern may expand to, so a
// typo such as {0..999999999} fails at once instead of exhausting memory.
const MaxExpansions = 1_000_000

// ExpandShards expands a shard list as WebDataset users write it: patterns
// joined with "::", each expanded with bash-style braces (see ExpandBraces).
// Empty patterns between separators are ignored.
func ExpandShards(spec string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(spec, "::") {
		if p == "" {
			continue
		}
		names, err := ExpandBraces(p)
		if err != nil {
			return nil, err
		}
		if len(out)+len(names) > MaxExpansions {
			return nil, fmt.Errorf("%w: %q expands to more than %d names", ErrBadPattern, spec, MaxExpansions)
		}
		out = append(out, names...)
	}
	return out, nil
}

// ExpandBraces expands one pattern with the rules of the Python braceexpand
// package that WebDataset uses (version 0.1.7):
//
//   - {a,b,c} lists alternatives, which may be empty ({,.bak}) and nested
//     ({a,{b,c}d});
//   - {1..10} and {10..1} are integer ranges, both ends included, with an
//     optional step {1..10..3}; a bound written with a leading zero
//     ({000..099}, {7..010}) pads every number to the width of the longer
//     bound; bounds may be negative;
//   - {a..e} and {e..a..2} are letter ranges over A-Z followed by a-z;
//   - a brace group that is neither a range nor holds a top-level comma
//     ({x}, {}) stays as written, its inside still expanded;
//   - a backslash makes the next character literal and is removed;
//   - unbalanced braces are an error (wrapping ErrBadPattern), where bash
//     would leave them be.
//
// Results come in order: alternatives left to right, ranges in range order,
// several groups like nested loops with the last group varying fastest.
func ExpandBraces(pattern string) ([]string, error) {
	raw, err := expandPattern(pattern, pattern)
	if err != nil {
		return nil, err
	}
	for i, s := range raw {
		raw[i] = unescape(s)
	}
	return raw, nil
}

// expandPattern expands p, a part of the pattern whole, without removing
// escapes (they are removed once, at the end, as braceexpand does).
func expandPattern(p, whole string) ([]string, error) {
	out := []string{""}
	start, depth := 0, 0
	for pos := 0; pos < len(p); pos++ {
		switch p[pos] {
		case '\\':
			pos++ // the next character is literal
		case '{':
			if depth == 0 && pos > start {
				out = product(out, []string{p[start:pos]})
				start = pos
			}
			depth++
		case '}':
			depth--
			if depth < 0 {
				return nil, unbalanced(whole)
			}
			if depth == 0 {
				inner := p[start+1 : pos]
				alts, ok, err := expandGroup(inner, whole)
				if err != nil {
					return nil, err
				}
				if !ok { // not a range or a list: keep the braces
					mid, err := expandPattern(inner, whole)
					if err != nil {
						return nil, err
					}
					alts = make([]string, len(mid))
					for i, m := range mid {
						alts[i] = "{" + m + "}"
					}
				}
				out = product(out, alts)
				if len(out) > MaxExpansions {
					return nil, fmt.Errorf("%w: %q expands to more than %d names", ErrBadPattern, whole, MaxExpansions)
				}
				start = pos + 1
			}
		}
	}
	if depth != 0 {
		return nil, unbalanced(whole)
	}
	if start < len(p) {
		out = product(out, []string{p[start:]})
	}
	return out, nil
}

func unbalanced(whole string) error {
	return fmt.Errorf("%w: unbalanced braces in %q", ErrBadPattern, whole)
}

// expandGroup expands the inside of one brace group. ok is false when it is
// neither a range nor a comma list.
func expandGroup(inner, whole string) (alts []string, ok bool, err error) {
	if r, ok, err := intRange(inner); ok || err != nil {
		if err != nil {
			return nil, false, fmt.Errorf("%w: %q: {%s} %v", ErrBadPattern, whole, inner, err)
		}
		return r, true, nil
	}
	if r, ok := letterRange(inner); ok {
		return r, true, nil
	}
	// A comma list: split at top-level commas.
	var parts []string
	start, depth := 0, 0
	for pos := 0; pos < len(inner); pos++ {
		switch inner[pos] {
		case '\\':
			pos++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, inner[start:pos])
				start = pos + 1
			}
		}
	}
	if depth != 0 {
		return nil, false, unbalanced(whole)
	}
	if parts == nil {
		return nil, false, nil
	}
	parts = append(parts, inner[start:])
	for _, part := range parts {
		sub, err := expandPattern(part, whole)
		if err != nil {
			return nil, false, err
		}
		alts = append(alts, sub...)
		if len(alts) > MaxExpansions {
			return nil, false, fmt.Errorf("%w: %q expands to more than %d names", ErrBadPattern, whole, MaxExpansions)
		}
	}
	return alts, true, nil
}

// splitRange splits "A..B" or "A..B..C" into its parts.
func splitRange(s string) (a, b, step string, ok bool) {
	parts := strings.Split(s, "..")
	switch len(parts) {
	case 2:
		return parts[0], parts[1], "", true
	case 3:
		return parts[0], parts[1], parts[2], true
	}
	return "", "", "", false
}

// isInt reports whether s is an optionally negative run of ASCII digits.
func isInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseStep reads a range step: digits with an optional minus sign, which
// is ignored (the direction comes from the bounds); 0 means 1.
func parseStep(s string) (int64, bool) {
	if s == "" {
		return 1, true
	}
	if !isInt(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "-"), 10, 64)
	if err != nil {
		return 0, false
	}
	if n == 0 {
		n = 1
	}
	return n, true
}

// intRange expands an integer range such as 000..099 or 10..1..3. ok is
// false when s is not an integer range; err reports one that is too long.
func intRange(s string) (out []string, ok bool, err error) {
	a, b, st, ok := splitRange(s)
	if !ok || !isInt(a) || !isInt(b) {
		return nil, false, nil
	}
	step, ok := parseStep(st)
	if !ok {
		return nil, false, nil
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, false, fmt.Errorf("has a bound out of range")
	}
	width := 0
	for _, bound := range []string{a, b} {
		if bound != "0" && bound != "-0" && (strings.HasPrefix(bound, "0") || strings.HasPrefix(bound, "-0")) {
			width = max(len(a), len(b))
		}
	}
	// Count first, so an enormous range fails without allocating.
	span := uint64(hi) - uint64(lo)
	if lo > hi {
		span = uint64(lo) - uint64(hi)
	}
	if span/uint64(step) >= MaxExpansions {
		return nil, false, fmt.Errorf("expands to more than %d names", MaxExpansions)
	}
	n := span/uint64(step) + 1
	out = make([]string, 0, n)
	for i := uint64(0); i < n; i++ {
		v := lo + int64(i)*step
		if lo > hi {
			v = lo - int64(i)*step
		}
		out = append(out, formatPadded(v, width))
	}
	return out, true, nil
}

// formatPadded formats v with at least width characters, zero-padded after
// any minus sign, like Python's "%0*d".
func formatPadded(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	if len(s) >= width {
		return s
	}
	if v < 0 {
		return "-" + strings.Repeat("0", width-len(s)) + s[1:]
	}
	return strings.Repeat("0", width-len(s)) + s
}

// letters is the alphabet of letter ranges: upper case, then lower case.
const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// letterRange expands a range such as a..e or e..a..2.
func letterRange(s string) ([]string, bool) {
	a, b, st, ok := splitRange(s)
	if !ok || len(a) != 1 || len(b) != 1 {
		return nil, false
	}
	i, j := strings.IndexByte(letters, a[0]), strings.IndexByte(letters, b[0])
	if i < 0 || j < 0 {
		return nil, false
	}
	step, ok := parseStep(st)
	if !ok {
		return nil, false
	}
	var out []string
	if i <= j {
		for k := int64(i); k <= int64(j); k += step {
			out = append(out, letters[k:k+1])
		}
	} else {
		for k := int64(i); k >= int64(j); k -= step {
			out = append(out, letters[k:k+1])
		}
	}
	return out, true
}

// product returns every a+b for a in as, b in bs, b varying fastest.
func product(as, bs []string) []string {
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, a+b)
		}
	}
	return out
}

// unescape removes one level of backslash escapes: "\x" becomes "x".
func unescape(s string) string {
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

package jsonobj

import (
	"strings"
	"testing"
)

// TestParseEncode splits objects into members, values as written, and
// writes them back; what is not exactly one object is refused.
func TestParseEncode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, out, err string
	}{
		{in: `{"b":1.50,"a":{"x": [1, 2]},"c":"\u00e9"}`, out: `{"b": 1.50, "a": {"x": [1, 2]}, "c": "\u00e9"}`},
		{in: " {} \n", out: `{}`},
		{in: `[1]`, err: "not a JSON object"},
		{in: `{"a":1} {}`, err: "data after"},
		{in: `{"a":1`, err: "not a JSON object"},
		{in: `{"a":}`, err: `"a"`},
		{in: ``, err: "not a JSON object"},
	} {
		ms, err := Parse([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := string(Encode(ms)); got != c.out {
			t.Errorf("Encode(Parse(%q)) = %s, want %s", c.in, got, c.out)
		}
	}
}

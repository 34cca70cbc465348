package convert

import (
	"strings"
	"testing"
)

// TestCheckRefBase: every form of --ref-base the documentation lists is
// accepted and normalised as references spell it; a bare relative path and
// what no reference can carry are refused, the bare path with the forms
// that are accepted.
func TestCheckRefBase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{".", ""},
		{"./", ""},
		{"./ds", "ds"},
		{"./data/ds/", "data/ds"},
		{"..", ".."},
		{"../ds", "../ds"},
		{"../../x/ds", "../../x/ds"},
		{"/data/ds", "/data/ds"},
		{"/data/ds/", "/data/ds"},
		{"s3://bucket/ds/", "s3://bucket/ds"},
		{"https://host/ds", "https://host/ds"},
	} {
		got, err := CheckRefBase(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CheckRefBase(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"other", "starts with ./ or ../"},
		{"data/ds", "starts with ./ or ../"},
		{"media", "absolute path (/data/ds), a URL"},
		{".hidden", "starts with ./ or ../"},
		{"a::b", `contains "::"`},
		{" /x", "white space"},
		{"s3://", "names no location"},
		{`C:\ds`, "backslash"},
		{"bad://x://y?z", "query"},
	} {
		if got, err := CheckRefBase(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckRefBase(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.want)
		}
	}
}

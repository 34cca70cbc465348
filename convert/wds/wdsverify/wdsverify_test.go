package wdsverify

import (
	"testing"

	"github.com/bpconvert/bpconvert/convert/wds"
)

// TestSampleField: a member's sample key and field are WebDataset's
// (everything up to the first dot of the last path element, then the rest,
// lower-cased; __x__ names are in no sample), as convert-wds makes them.
func TestSampleField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sample, field string
		ok                  bool
	}{
		{"000001.jpg", "000001", "jpg", true},
		{"a/b/c.seg.PNG", "a/b/c", "seg.png", true},
		{"d.x/e.json", "d.x/e", "json", true},
		{"noext", "", "", false},
		{"dir.d/noext", "", "", false},
		{"x.", "", "", false},
		{"__key__.txt", "__key__", "txt", true},
		{"__index__", "", "", false},
		{"__meta__/a.txt", "", "", false},
		{"_a_.txt", "_a_", "txt", true},
		{"a/.b", "a/", "b", true},
	} {
		field, sample, ok := sampleField(tc.name)
		if ok != tc.ok || sample != tc.sample || field != tc.field {
			t.Errorf("%q: sample %q field %q (%v); want %q %q (%v)", tc.name, sample, field, ok, tc.sample, tc.field, tc.ok)
		}
		s, f, cok := wds.SplitSample(tc.name)
		if cok && f == "" {
			cok = false
		}
		if cok != ok || ok && (s != sample || f != field) {
			t.Errorf("%q: convert-wds splits it %q %q (%v)", tc.name, s, f, cok)
		}
	}
}

// TestInlineCell: a member of an inline field is compared with its cell in
// the samples table (under the key prefix of its shard), one of another
// field with a pack member.
func TestInlineCell(t *testing.T) {
	t.Parallel()
	tb := &table{
		inline:     map[string]bool{"cls": true, "txt": true},
		inlineText: map[string]string{"s1\x00cls": "3", "sh/s2\x00txt": "hi"},
	}
	for _, tc := range []struct {
		prefix, name, bytes string
		inline              bool
		reason              string
	}{
		{"", "s1.cls", "3", true, ""},
		{"", "s1.CLS", "3", true, ""},
		{"", "s1.cls", "4", true, `inline field "cls" of sample "s1" differs from the source`},
		{"", "s3.cls", "3", true, `inline field "cls" of sample "s3" is not in the samples table`},
		{"sh/", "s2.txt", "hi", true, ""},
		{"", "s2.txt", "hi", true, `inline field "txt" of sample "s2" is not in the samples table`},
		{"", "s1.jpg", "", false, ""},
		{"", "__index__", "", false, ""},
	} {
		cmp := tb.inlineCell(tc.prefix, tc.name)
		if (cmp != nil) != tc.inline {
			t.Errorf("%q%q: inline %v, want %v", tc.prefix, tc.name, cmp != nil, tc.inline)
			continue
		}
		if cmp != nil {
			if got := cmp([]byte(tc.bytes)); got != tc.reason {
				t.Errorf("%q%q: %q, want %q", tc.prefix, tc.name, got, tc.reason)
			}
		}
	}
}

package parquet

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParquetRewriteHF(t *testing.T) {
	t.Parallel()
	str := `{"dtype": "string", "_type": "Value"}`
	cases := []struct {
		name        string
		meta        string
		paths       [][]string
		want        string
		wantMissing []string
		wantErr     bool
	}{
		{
			name:  "image, other features and keys untouched in order",
			meta:  `{"info": {"features": {"label": {"dtype": "int64", "_type": "Value"}, "image": {"_type": "Image"}}, "splits": {"train": 3}}, "fingerprint": "abc"}`,
			paths: [][]string{{"image"}},
			want:  `{"info": {"features": {"label": {"dtype": "int64", "_type": "Value"}, "image": ` + str + `}, "splits": {"train": 3}}, "fingerprint": "abc"}`,
		},
		{
			name:  "Sequence keeps its spelling and length",
			meta:  `{"info":{"features":{"frames":{"feature":{"_type":"Image"},"length":-1,"_type":"Sequence"}}}}`,
			paths: [][]string{{"frames"}},
			want:  `{"info": {"features": {"frames": {"feature": ` + str + `, "length": -1, "_type": "Sequence"}}}}`,
		},
		{
			name:  "List keeps its spelling",
			meta:  `{"info":{"features":{"frames":{"feature":{"_type":"Image"},"_type":"List"}}}}`,
			paths: [][]string{{"frames"}},
			want:  `{"info": {"features": {"frames": {"feature": ` + str + `, "_type": "List"}}}}`,
		},
		{
			name:  "legacy list as a one-element array",
			meta:  `{"info":{"features":{"frames":[{"_type":"Audio","sampling_rate":16000}]}}}`,
			paths: [][]string{{"frames"}},
			want:  `{"info": {"features": {"frames": [` + str + `]}}}`,
		},
		{
			name:  "nested struct field",
			meta:  `{"info":{"features":{"meta":{"thumb":{"dtype":"binary","_type":"Value"},"source":{"dtype":"string","_type":"Value"}}}}}`,
			paths: [][]string{{"meta", "thumb"}},
			want:  `{"info": {"features": {"meta": {"thumb": ` + str + `, "source": {"dtype":"string","_type":"Value"}}}}}`,
		},
		{
			name:        "undeclared path is reported, metadata kept",
			meta:        `{"info":{"features":{"id":{"dtype":"int64","_type":"Value"}}}}`,
			paths:       [][]string{{"jpg"}},
			want:        `{"info":{"features":{"id":{"dtype":"int64","_type":"Value"}}}}`,
			wantMissing: []string{"jpg"},
		},
		{
			name:        "a field inside a media feature is not declared",
			meta:        `{"info":{"features":{"image":{"_type":"Image"}}}}`,
			paths:       [][]string{{"image", "bytes"}},
			want:        `{"info":{"features":{"image":{"_type":"Image"}}}}`,
			wantMissing: []string{"image.bytes"},
		},
		{
			name: "no info",
			meta: `{"fingerprint":"x"}`, paths: [][]string{{"image"}},
			want: `{"fingerprint":"x"}`, wantMissing: []string{"image"},
		},
		{name: "not JSON", meta: `{"info":`, paths: [][]string{{"image"}}, want: `{"info":`, wantErr: true},
		{name: "trailing data", meta: `{} {}`, paths: [][]string{{"image"}}, want: `{} {}`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rewriteHF(tc.meta, featureEdit{strings: tc.paths})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !tc.wantErr && !json.Valid([]byte(got)) {
				t.Errorf("result is not valid JSON: %s", got)
			}
		})
	}
}

func TestParquetDescribeMedia(t *testing.T) {
	t.Parallel()
	cases := []struct{ feature, want string }{
		{`{"_type":"Image"}`, "Image"},
		{`{"sampling_rate":16000,"_type":"Audio"}`, "Audio"},
		{`{"_type":"Video"}`, "Video"},
		{`{"_type":"Pdf"}`, "Pdf"},
		{`{"feature":{"_type":"Image"},"_type":"Sequence"}`, "Sequence(Image)"},
		{`{"feature":{"feature":{"_type":"Image"},"_type":"List"},"_type":"List"}`, "List(List(Image))"},
		{`[{"_type":"Image"}]`, "[Image]"},
		{`{"dtype":"binary","_type":"Value"}`, ""},
		{`{"feature":{"dtype":"string","_type":"Value"},"_type":"List"}`, ""},
		{`{"names":["a"],"_type":"ClassLabel"}`, ""},
		{`[]`, ""},
		{`"Image"`, ""},
	}
	for _, tc := range cases {
		if got := describeMedia(json.RawMessage(tc.feature)); got != tc.want {
			t.Errorf("describeMedia(%s) = %q, want %q", tc.feature, got, tc.want)
		}
	}
}

// FuzzParquetRewriteHF checks that rewriting never panics, that valid JSON stays
// valid JSON, and that a rewritten feature is found again as a string Value.
func FuzzParquetRewriteHF(f *testing.F) {
	f.Add(`{"info":{"features":{"image":{"_type":"Image"}}}}`, "image")
	f.Add(`{"info":{"features":{"frames":{"feature":{"_type":"Image"},"_type":"Sequence"}}}}`, "frames")
	f.Add(`{"info":{"features":{"m":{"t":[{"_type":"Audio"}]}}}}`, "m.t")
	f.Add(`{"info": {"features": {"a": {"dtype": "binary", "_type": "Value"}}}, "fingerprint": "x"}`, "a")
	f.Fuzz(func(t *testing.T, meta, path string) {
		p := strings.Split(path, ".")
		got, err := rewriteHF(meta, featureEdit{strings: [][]string{p}})
		if err != nil {
			if got != meta {
				t.Fatalf("error %v but metadata changed", err)
			}
			return
		}
		if json.Valid([]byte(meta)) && !json.Valid([]byte(got)) {
			t.Fatalf("valid input %q became invalid %q", meta, got)
		}
		if got != meta {
			features, err := hfFeatures(got)
			if err != nil {
				t.Fatalf("rewritten metadata unreadable: %v", err)
			}
			feat, ok := featureAt(features, p)
			if !ok {
				t.Fatalf("rewritten feature %q not found in %s", path, got)
			}
			for {
				e, _, _, isList := listElem(feat)
				if !isList {
					break
				}
				feat = e
			}
			if !jsonEqual(feat, stringValue) {
				t.Fatalf("feature %q is %s after rewriting", path, feat)
			}
		}
	})
}

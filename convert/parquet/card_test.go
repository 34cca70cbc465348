package parquet

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRewriteCard rewrites dataset cards and dataset_info.json files (in
// testdata/card, written the way Hugging Face datasets writes them; see the
// card's comment) and compares them with golden files (-update rewrites
// them). Only the dtype of the extracted features changes; every other byte
// is kept, including the body and fields of the same name elsewhere.
func TestRewriteCard(t *testing.T) {
	cases := []struct {
		name, file string
		paths      [][]string
		changed    bool
	}{
		{"card", "README.md", [][]string{{"image"}, {"frames"}, {"clips"}, {"meta", "thumb"}, {"audio"}}, true},
		{"card-one", "README.md", [][]string{{"image"}}, true},
		{"card-none", "README.md", [][]string{{"nothing"}, {"meta"}}, false},
		{"configs", "configs.md", [][]string{{"image"}, {"extra", "image"}}, true},
		{"info", "dataset_info.json", [][]string{{"image"}, {"frames"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "card", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			rewrite := rewriteCard
			if tc.file == "dataset_info.json" {
				rewrite = rewriteInfo
			}
			out, changed, err := rewrite(in, tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
			if !changed {
				if string(out) != string(in) {
					t.Fatal("unchanged card was altered")
				}
				return
			}
			golden(t, filepath.Join("testdata", "card", tc.name+".golden"), string(out))
		})
	}
}

func TestRewriteCardRefused(t *testing.T) {
	if _, _, err := rewriteCard([]byte("---\nlicense: mit\n"), [][]string{{"image"}}); err == nil {
		t.Fatal("front matter without its closing line was accepted")
	}
	if out, changed, err := rewriteCard([]byte("# no front matter\n"), [][]string{{"image"}}); err != nil || changed || string(out) != "# no front matter\n" {
		t.Fatalf("card without front matter: %q %v %v", out, changed, err)
	}
	if _, _, err := rewriteInfo([]byte("[1]"), [][]string{{"image"}}); err == nil {
		t.Fatal("dataset_info.json that is not an object was accepted")
	}
}

package parquet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRewriteCard rewrites dataset cards and dataset_info.json files (in
// testdata/card, written the way Hugging Face datasets writes them; see the
// card's comment) and compares them with golden files (-update rewrites
// them). Only the dtype of the extracted features changes; every other byte
// is kept, including the body and fields of the same name elsewhere.
func TestRewriteCard(t *testing.T) {
	t.Parallel()
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
			kind := cardName
			if tc.file == "dataset_info.json" {
				kind = infoName
			}
			out, changed, err := rewriteMetadata(kind, in, cardEdit{features: featureEdit{strings: tc.paths}})
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
	t.Parallel()
	e := cardEdit{features: featureEdit{strings: [][]string{{"image"}}}}
	if _, _, err := rewriteCard([]byte("---\nlicense: mit\n"), e); err == nil {
		t.Fatal("front matter without its closing line was accepted")
	}
	if out, changed, err := rewriteCard([]byte("# no front matter\n"), e); err != nil || changed || string(out) != "# no front matter\n" {
		t.Fatalf("card without front matter: %q %v %v", out, changed, err)
	}
	if _, _, err := rewriteInfo([]byte("[1]"), e.features); err == nil {
		t.Fatal("dataset_info.json that is not an object was accepted")
	}
}

// TestRewriteCardYAML rewrites cards whose front matter PyYAML wrote
// (testdata/card/anchors.md: yaml.safe_dump(meta, sort_keys=False) of two
// configs sharing one features list, which PyYAML writes as &id001 and
// *id001) and a card that has none: aliases are resolved before the
// features change, a data_files pattern that would take in the shards
// names the tables instead, and a card without configs gains them.
func TestRewriteCardYAML(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile(filepath.Join("testdata", "card", "anchors.md"))
	if err != nil {
		t.Fatal(err)
	}
	e := cardEdit{
		features:  featureEdit{strings: [][]string{{"thumb"}}, siblings: [][]string{{"image"}}},
		tables:    []string{"a/x.parquet", "b/y.parquet"},
		packFiles: []string{"media/pack-0000.zip", "media/pack.manifest.json"},
	}
	out, changed, err := rewriteCard(in, e)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if strings.Contains(string(out), "&id") || strings.Contains(string(out), "*id") {
		t.Errorf("anchors or aliases left:\n%s", out)
	}
	golden(t, filepath.Join("testdata", "card", "anchors.golden"), string(out))

	out, changed, err = rewriteCard(nil, cardEdit{tables: []string{"data.parquet"}, addConfigs: true})
	if err != nil || !changed {
		t.Fatalf("no card: changed %v, err %v", changed, err)
	}
	want := "---\nconfigs:\n  - config_name: default\n    data_files:\n      - split: train\n        path:\n          - data.parquet\n---\n"
	if string(out) != want {
		t.Errorf("card written for a source without one:\n%s\nwant\n%s", out, want)
	}
}

func TestNamesSplit(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]bool{
		"data.parquet": false, "train.parquet": true, "data/train-00000-of-00001.parquet": true,
		"my_test.parquet": true, "contest.parquet": false, "validation/x.parquet": true, "x/dev/y.parquet": true,
		"media/pack-0000.zip": false, "devices.parquet": false, "part-val-1.parquet": true, "trainer/x.parquet": false,
	} {
		if got := namesSplit(rel); got != want {
			t.Errorf("namesSplit(%q) = %v, want %v", rel, got, want)
		}
	}
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "media/pack-0000.zip", true}, {"*.parquet", "media/x.parquet", false}, {"**/*.parquet", "a.parquet", true},
		{"data/train-*", "data/train-0.parquet", true}, {"data/train-*", "media/pack-0000.zip", false},
		{"*/*", "media/pack-0000.zip", true}, {"data/**", "data/a/b.parquet", true},
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

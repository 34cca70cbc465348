package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// hfReport is what testdata/hfread.py prints.
type hfReport struct {
	Features       string            `json:"features"`
	SourceFeatures string            `json:"source_features"`
	Payloads       int               `json:"payloads"`
	Decoded        int               `json:"decoded"`
	Mismatches     []string          `json:"mismatches"`
	Error          *string           `json:"error"`
	FieldMetadata  map[string]string `json:"field_metadata"`
	SameFields     []string          `json:"same_fields"`
	KeptPaths      int               `json:"kept_paths"`
}

// hfRead runs testdata/hfread.py on a converted dataset from directory cwd.
func hfRead(t *testing.T, py, src, dst, cwd string, mode ...string) hfReport {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "hfread.py"), src, dst, cwd}, mode...)...)
	cmd.Env = hfEnv(t)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("hfread.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r hfReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return r
}

// hfEnv is this process's environment with a cache of datasets' own
// (datasets caches what it loads by the data files' names and times, so
// datasets converted in one second into the same names would be taken for
// one another) and no reaching out to the Hub.
func hfEnv(t *testing.T) []string {
	return append(os.Environ(), "HF_HOME="+t.TempDir(), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1")
}

// TestHFDatasetsReadsConverted converts a dataset that Hugging Face
// datasets 5.2.0 wrote (testdata/hfwrite.py: Image(), Audio(),
// List(Image()), a binary column, a card whose configs share features
// through a YAML alias and whose default data_files is "**") and loads the
// output with datasets.load_dataset(DST) from another directory: the
// features are the source's (the binary column now Value('string')),
// every image decodes to the source's pixels, every payload read back
// through datasets' embed_table_storage (fsspec, as push_to_hub does) is
// the source's bytes, and no field gained metadata. With the default,
// relative references it loads from the dataset root only. The same
// dataset saved with save_to_disk converts into a save_to_disk directory
// that datasets.load_from_disk reads the same way.
func TestHFDatasetsReadsConverted(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src := filepath.Join(root, "src")
	disk := filepath.Join(root, "disk")
	gen := exec.Command(py, filepath.Join("testdata", "hfwrite.py"), src, disk)
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("hfwrite.py: %v\n%s", err, out)
	}
	convert := func(t *testing.T, src, dst string, extra ...string) {
		t.Helper()
		args := append([]string{"convert-parquet", src, dst, "--yes", "--quiet",
			"--column", "image", "--column", "audio", "--column", "frames", "--column", "thumb"}, extra...)
		if r := bp(t, args...); r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
			t.Fatalf("verify --against: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
	}
	wantFeatures := func(t *testing.T, r hfReport) {
		t.Helper()
		want := strings.Replace(r.SourceFeatures, "'thumb': Value('binary')", "'thumb': Value('string')", 1)
		if r.Features != want || !strings.Contains(want, "'image': Image(") || !strings.Contains(want, "List(Image(") {
			t.Errorf("features\n%s\nwant\n%s", r.Features, want)
		}
	}
	elsewhere := t.TempDir()

	t.Run("absolute references load from any directory", func(t *testing.T) {
		dst := filepath.Join(root, "abs")
		convert(t, src, dst, "--ref-base", dst)
		r := hfRead(t, py, src, dst, elsewhere)
		if r.Error != nil || len(r.Mismatches) > 0 {
			t.Fatalf("error %v, mismatches %v", r.Error, r.Mismatches)
		}
		wantFeatures(t, r)
		if r.Payloads != 158 || r.Decoded != 39 {
			t.Errorf("%d payloads compared (want 158), %d images decoded (want 39)", r.Payloads, r.Decoded)
		}
		if len(r.FieldMetadata) > 0 {
			t.Errorf("fields gained metadata: %v", r.FieldMetadata)
		}
		if strings.Join(r.SameFields, ",") != "image,audio,frames,label" {
			t.Errorf("fields equal to the source's, metadata included: %v", r.SameFields)
		}

		// The reading recipe, examples/hf-datasets/read_hf.py, as a user
		// runs it: from another directory, 100 random rows.
		cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "examples", "hf-datasets", "read_hf.py"), dst, "--n", "100")
		cmd.Dir, cmd.Env = elsewhere, hfEnv(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("read_hf.py: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var got struct {
			Rows, Refs, Bytes int
			Columns           []string
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || !strings.Contains(lines[0], "'image': Image(") {
			t.Fatalf("read_hf.py printed %s (%v)", out, err)
		}
		if got.Rows != 100 || got.Refs < 190 || got.Bytes < got.Refs*40 || strings.Join(got.Columns, ",") != "image,audio" {
			t.Errorf("read_hf.py: %+v", got)
		}
	})

	t.Run("relative references load from the root", func(t *testing.T) {
		dst := filepath.Join(root, "rel")
		convert(t, src, dst)
		r := hfRead(t, py, src, dst, elsewhere)
		if r.Error == nil || !strings.Contains(*r.Error, "FileNotFoundError") {
			t.Fatalf("loaded from another directory with relative references: error %v", r.Error)
		}
		r = hfRead(t, py, src, dst, dst)
		if r.Error != nil || len(r.Mismatches) > 0 || r.Payloads != 158 {
			t.Fatalf("from the root: error %v, mismatches %v, %d payloads", r.Error, r.Mismatches, r.Payloads)
		}
		wantFeatures(t, r)
	})

	t.Run("source paths kept beside the media fields", func(t *testing.T) {
		dst := filepath.Join(root, "paths")
		convert(t, src, dst, "--ref-base", dst, "--keep-path")
		r := hfRead(t, py, src, dst, elsewhere)
		if r.Error != nil || len(r.Mismatches) > 0 {
			t.Fatalf("error %v, mismatches %v", r.Error, r.Mismatches)
		}
		if !strings.Contains(r.Features, "'image_path': Value('string')") || !strings.Contains(r.Features, "'frames_path': List(Value('string'))") {
			t.Errorf("features %s", r.Features)
		}
		if r.KeptPaths != 79 {
			t.Errorf("%d kept paths compared, want 79", r.KeptPaths)
		}
	})

	t.Run("a save_to_disk dataset loads with load_from_disk", func(t *testing.T) {
		dst := filepath.Join(root, "todisk")
		convert(t, disk, dst, "--ref-base", dst)
		r := hfRead(t, py, disk, dst, elsewhere, "disk")
		if r.Error != nil || len(r.Mismatches) > 0 {
			t.Fatalf("error %v, mismatches %v", r.Error, r.Mismatches)
		}
		wantFeatures(t, r)
		if r.Payloads != 158 || r.Decoded != 39 {
			t.Errorf("%d payloads compared (want 158), %d images decoded (want 39)", r.Payloads, r.Decoded)
		}
	})
}

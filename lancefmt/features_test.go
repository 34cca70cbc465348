package lancefmt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestFeatureTable opens, for each bit of featureTable, a manifest whose
// reader flags set it (with its writer twin where Lance pairs them): the
// accepted and handled bits open, the refused ones fail with an error that
// names the feature and gives the table's advice.
func TestFeatureTable(t *testing.T) {
	t.Parallel()
	if len(featureTable) != 18 {
		t.Fatalf("%d entries, want bits 0-17", len(featureTable))
	}
	for i, f := range featureTable {
		if f.flag != 1<<i {
			t.Fatalf("entry %d is for flag %#x", i, f.flag)
		}
		if f.action == featureRefuse && f.advice == "" || f.action != featureRefuse && f.advice != "" {
			t.Errorf("bit %d (%s): action %d with advice %q", i, f.meaning, f.action, f.advice)
		}
		if f.action != featureRefuse && !f.lanceReads {
			t.Errorf("bit %d (%s): accepted although Lance 14 refuses it", i, f.meaning)
		}
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "_versions"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_versions", "1.manifest"), manifestBytes(f.flag), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), dir, OpenOptions{})
		if f.action != featureRefuse {
			if err != nil {
				t.Errorf("bit %d (%s): %v", i, f.meaning, err)
			}
			continue
		}
		var fe *UnsupportedFeaturesError
		if !errors.As(err, &fe) || fe.Flags != f.flag {
			t.Errorf("bit %d (%s): error %v, want an UnsupportedFeaturesError for it", i, f.meaning, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, f.meaning+" ("+f.advice+")") || strings.Contains(msg, "data_storage_version") {
			t.Errorf("bit %d: error %q does not name %q with its advice", i, msg, f.meaning)
		}
	}
	// A paired bit set on one side only is a corrupt manifest, as in Lance.
	for _, bit := range []uint64{flagMixedFileVersions, flagManagedBlobs} {
		m := &Manifest{ReaderFeatureFlags: bit}
		if err := m.checkPaired(); !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), featureOf(bit).meaning) {
			t.Errorf("reader flag %#x alone: %v", bit, err)
		}
	}
}

// lanceWriterTwins are the bits Lance 14 pairs: a manifest setting one of
// them in the reader flags must set it in the writer flags too.
const lanceWriterTwins = flagMixedFileVersions | flagFragmentReuseIndex | flagManagedBlobs | flagZoneWriteSeeds

// TestFeatureTableAgainstLance checks featureTable's lanceReads against
// Lance itself: fixtures/lance14/flags.py sets each bit in the manifest of a
// table pylance 14.0.3 wrote (with stable row ids, so bit 1 describes it)
// and opens it with pylance 14.0.3.
func TestFeatureTableAgainstLance(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	var pairs [][2]uint64
	for _, f := range featureTable {
		r := flagStableRowIDs | f.flag
		w := uint64(flagStableRowIDs)
		if f.flag&lanceWriterTwins != 0 {
			w |= f.flag
		}
		pairs = append(pairs, [2]uint64{r, w})
	}
	arg, _ := json.Marshal(pairs)
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "flags.py"), t.TempDir(), string(arg))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flags.py: %v\n%s", err, stderr.String())
	}
	var got []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(featureTable) {
		t.Fatalf("flags.py printed %q: %v", out, err)
	}
	for i, f := range featureTable {
		if got[i].OK != f.lanceReads {
			t.Errorf("bit %d (%s): pylance 14 opens it: %v (%s), the table says %v", i, f.meaning, got[i].OK, got[i].Error, f.lanceReads)
		}
	}
}

// deferredRemapPy writes, with pylance 14.0.3, a table the way the
// justification of bits 7 and 10 in featureTable describes: four appends,
// a BTREE index, then compact_files(defer_index_remap=True).
const deferredRemapPy = `
import sys, lance, pyarrow as pa
out = sys.argv[1]
t = pa.table({"id": pa.array(range(100)), "v": pa.array([float(i) for i in range(100)])})
for i in range(4):
    ds = lance.write_dataset(t.slice(25 * i, 25), out, mode="append", data_storage_version="2.2")
ds.create_scalar_index("id", "BTREE")
ds.optimize.compact_files(defer_index_remap=True)
`

// TestFeatureBitsPylanceLeaves checks, against the pinned pylance, why
// bits 7 and 10 are justified rather than converted from a real table: a
// compaction that defers index remapping leaves a table whose reader flags
// set neither (it opens), and the index API takes no covering columns.
func TestFeatureBitsPylanceLeaves(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	dir := filepath.Join(t.TempDir(), "d.lance")
	if out, err := exec.Command(py, "-c", deferredRemapPy, dir).CombinedOutput(); err != nil {
		t.Fatalf("writing the table: %v\n%s", err, out)
	}
	ds, err := Open(context.Background(), dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := ds.Manifest().ReaderFeatureFlags; f&(flagCoveredIndex|flagFragmentReuseIndex) != 0 {
		t.Errorf("reader flags %#x set bit 7 or 10: a real table to convert, no longer only a built manifest", f)
	}
	sig := exec.Command(py, "-c", `
import inspect, lance
ps = set(inspect.signature(lance.LanceDataset.create_scalar_index).parameters) | set(inspect.signature(lance.LanceDataset.create_index).parameters)
print(sorted(p for p in ps if "cover" in p))`)
	out, err := sig.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "[]" {
		t.Errorf("pylance's index API takes covering columns (%s): a real table with bit 7 can be written", out)
	}
}

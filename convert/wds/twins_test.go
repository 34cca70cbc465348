package wds

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestPlanWarnsOfTwins: keys that differ only in case or in Unicode
// normalization (a shard written by Python's tarfile) are warned of in the
// plan; distinct keys are not.
func TestPlanWarnsOfTwins(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "python3")
	dir := t.TempDir()
	shard := filepath.Join(dir, "s.tar")
	script := `
import io, sys, tarfile, unicodedata
names = [unicodedata.normalize("NFC", "caf\u00e9.jpg"), unicodedata.normalize("NFD", "caf\u00e9.jpg"), "A.txt", "a.txt", "b.txt"]
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as tf:
    for i, n in enumerate(names):
        ti = tarfile.TarInfo(n)
        data = n.encode()
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
`
	if out, err := exec.Command("python3", "-c", script, shard).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v %s", err, out)
	}
	p, err := inspect(context.Background(), Options{src: shard, NoTable: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings, "\n")
	if !strings.Contains(w, "keys that differ only in case or Unicode normalization, 2 groups") {
		t.Fatalf("warnings: %q", p.Warnings)
	}
	if strings.Contains(w, "b.txt") {
		t.Fatalf("a distinct key is named: %q", w)
	}
}

package lance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/progress"
)

// TestQuickPlan: with QuickPlan the plan gathers no evidence (no value is
// read for it), and the conversion writes the same packs and table as with
// the full plan.
func TestQuickPlan(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "lancefmt", "testdata", "lance", "s_blob_2_1.lance")
	ctx := t.Context()
	var outs []string
	for _, quick := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "out")
		j, err := NewJob(ctx, src, dst, Options{Options: convert.Options{QuickPlan: quick}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := j.Plan(ctx, nil, progress.Nop{})
		if err != nil {
			t.Fatal(err)
		}
		sampled := int64(0)
		for _, e := range p.Entries {
			if e.Evidence != nil {
				sampled += e.Evidence.Sampled
			}
		}
		if (sampled == 0) != quick {
			t.Fatalf("QuickPlan %v: %d values sampled for the plan", quick, sampled)
		}
		sum, err := j.Run(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Blobs == 0 {
			t.Fatalf("QuickPlan %v: nothing packed", quick)
		}
		b, err := os.ReadFile(filepath.Join(dst, "media", "pack-0000.zip"))
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
	}
	if outs[0] != outs[1] {
		t.Fatal("the packs differ with and without QuickPlan")
	}
}

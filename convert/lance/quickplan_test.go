package lance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// TestQuickPlan: with QuickPlan the plan gathers no evidence (no value is
// read for it), and the conversion writes the same packs and table as with
// the full plan. The quick plan's text says its figures were not sampled
// rather than show zeros it never counted.
func TestQuickPlan(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "lancefmt", "testdata", "lance", "s_blob_2_1.lance")
	ctx := t.Context()
	var outs []string
	for _, quick := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "out")
		j, err := NewJob(ctx, src, converttest.Dest(t, dst), Options{Options: convert.Options{QuickPlan: quick}})
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
		// A figure the plan did not count is said to be not sampled, never 0.
		var text strings.Builder
		if err := plan.RenderText(&text, p); err != nil {
			t.Fatal(err)
		}
		zero := regexp.MustCompile(`\b0 (values|members)\b|\b0 B\b`)
		if quick != strings.Contains(text.String(), plan.NotSampledText) || quick && zero.MatchString(text.String()) {
			t.Fatalf("QuickPlan %v: the text plan says %q (or a 0 it did not count) where it should not:\n%s", quick, plan.NotSampledText, text.String())
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

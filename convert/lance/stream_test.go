package lance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lance/lanceverify"
	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/progress"
)

// The large-page datasets are written once per run by
// fixtures/lance14/big.py with pylance 14.0.3 (about 1.6 GB, 30-60 s on a
// shared 2-core machine).
var bigPylance14Gen = testtool.Generated{Project: "lance14", Script: "big.py", Python: true}

// bigPylance14 returns the interpreter and the directory of big.py's
// datasets.
func bigPylance14(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("writes 1.6 GB of Lance datasets")
	}
	return testtool.Python(t), bigPylance14Gen.Dir(t)
}

// childEnv names the variable that makes the test binary a conversion
// process (see convertChild): its value is the JSON of a childJob.
const childEnv = "BPCONVERT_TEST_CONVERT_LANCE"

// childJob is the conversion a child process runs.
type childJob struct {
	Src, Dst, Column string
	// Quick skips the plan's evidence pass (QuickPlan).
	Quick bool
	// Copy, when set, is where the child then rewrites the source with only
	// its "id" column replaced, so that Column's pages are page-copied.
	Copy string
	// Verify makes the child verify Dst against Src instead (what
	// `verify DST --against SRC` runs) and print the payloads compared.
	Verify bool
}

// convertChild runs, in a process of its own, the conversion that the
// environment names (the plan with its evidence pass, then the run; see
// testtool.ChildMain, which prints its peak RSS), with a line of the
// object bytes each step fetched when the source is in a bucket, or the
// verification it names, with a line of the payloads compared; without the
// variable it returns.
func convertChild() {
	testtool.ChildMain(childEnv, func(cj childJob, out io.Writer) error {
		ctx := context.Background()
		if cj.Verify {
			rep, err := dsverify.Verify(ctx, cj.Dst, dsverify.Options{Against: cj.Src, Comparers: []dsverify.Comparer{lanceverify.Comparer}})
			if err != nil {
				return err
			}
			if !rep.OK() || rep.Against == nil {
				return fmt.Errorf("verify --against: %+v", rep)
			}
			fmt.Fprintf(out, "%s %d\n", comparedLine, rep.Against.Payloads)
			return nil
		}
		stats := &objstore.Stats{}
		src, err := OpenSource(ctx, cj.Src, objstore.Options{Stats: stats})
		if err != nil {
			return err
		}
		// Only whether the source is remote outlives the conversion: the
		// copy below opens the dataset afresh, and the conversion's tree
		// (its kept reads) must not count in the copy's memory.
		remote := src.Remote()
		fetched := func(stats *objstore.Stats) {
			if remote {
				fmt.Fprintf(out, "%s %d\n", fetchedLine, stats.BytesRead())
			}
		}
		dst, err := convert.ParseDest(cj.Dst, "")
		if err != nil {
			return err
		}
		j, err := NewJob(ctx, cj.Src, dst, Options{Options: convert.Options{QuickPlan: cj.Quick, Source: src}, Columns: []string{cj.Column}})
		if err != nil {
			return err
		}
		if _, err := j.Plan(ctx, nil, progress.Nop{}); err != nil {
			return err
		}
		if _, err = j.Run(ctx, nil); err != nil {
			return err
		}
		fetched(stats)
		if cj.Copy == "" {
			return nil
		}
		stats = &objstore.Stats{}
		ds, err := lancestore.Open(ctx, cj.Src, lancefmt.OpenOptions{}, stats)
		if err != nil {
			return err
		}
		_, err = ds.Rewrite(ctx, cj.Copy, lancefmt.RewriteOptions{Replace: []lancefmt.Replacement{{Column: "id",
			Values: func(_ context.Context, frag, n uint64) ([]string, []bool, error) {
				vals, valid := make([]string, n), make([]bool, n)
				for i := range vals {
					vals[i], valid[i] = fmt.Sprintf("%d/%d", frag, i), true
				}
				return vals, valid, nil
			}}}})
		fetched(stats)
		return err
	})
}

// fetchedLine starts the lines on which a child that read its source from
// a bucket reports the object bytes each step fetched; comparedLine the
// line on which a verifying child reports the payloads it compared.
const (
	fetchedLine  = "fetched bytes:"
	comparedLine = "compared payloads:"
)

// maxRSS128 is the bound on a conversion's peak RSS, whatever its pages
// (issue 27).
const maxRSS128 = 128 << 20

// TestRunPeakRSSPylance14 converts datasets that pylance 14.0.3 wrote in
// one write_dataset call (fixtures/lance14/big.py): a payload column in one
// full-zip page of about 1 GB (file version 2.2), in one page of 200 MB
// (2.1, compressible values mixed in), in 122 pages of 16 rows with values
// of 6 and 20 MiB (2.2; the ones larger than a value scan holds are read
// in pieces), and a blob v2 column. Each conversion (plan with
// its evidence pass, then the run) runs in a process of its own whose peak
// RSS must stay at most 128 MiB; pylance 14.0.3 then reads the output and
// the source (fixtures/lance14/check.py: every reference resolves through
// its zip shard to the source's bytes, every kept column equal), and
// verify --against, in a process of its own under the same bound, compares
// every payload again.
func TestRunPeakRSSPylance14(t *testing.T) {
	t.Parallel()
	py, root := bigPylance14(t)
	for _, tc := range []struct {
		name     string
		column   string
		minPage  uint64 // bytes of the largest page, at least
		minPages int    // pages of the column, at least
		compared int
		members  int
	}{
		{name: "one_page_2_2", column: "data", minPage: 1 << 30 * 95 / 100, minPages: 1, compared: 10000, members: 10000},
		{name: "one_page_2_1", column: "data", minPage: 190 << 20, minPages: 1, compared: 2999, members: 2999},
		{name: "pages_2_2", column: "data", minPages: 100, compared: 1999, members: 1999},
		{name: "blob2_2_2", column: "blob", minPages: 1, compared: 2499, members: 2499},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(root, tc.name+".lance")
			largest, pages := pageSizes(t, src, tc.column)
			if largest < tc.minPage || pages < tc.minPages {
				t.Fatalf("the column has %d pages of at most %d bytes; the test needs %d or more, of at least %d bytes", pages, largest, tc.minPages, tc.minPage)
			}
			dst := filepath.Join(t.TempDir(), "out")
			rss, _ := childPeak(t, childJob{Src: src, Dst: dst, Column: tc.column})
			t.Logf("%d pages, largest %.1f MiB; peak RSS of the conversion %.1f MiB (bound %.0f MiB)", pages, mib(largest), mib(rss), mib(maxRSS128))
			if rss > maxRSS128 {
				t.Errorf("peak RSS %.1f MiB, want at most %.0f MiB", mib(rss), mib(maxRSS128))
			}
			got := pylanceCheck(t, py, src, dst, tc.column)
			for _, p := range got.Problems {
				t.Error(p)
			}
			if got.Compared != tc.compared || got.Members != tc.members {
				t.Errorf("%d values compared through %d members, want %d through %d", got.Compared, got.Members, tc.compared, tc.members)
			}
			rss, lines := childPeak(t, childJob{Src: src, Dst: dst, Verify: true})
			t.Logf("peak RSS of verify --against %.1f MiB (bound %.0f MiB)", mib(rss), mib(maxRSS128))
			if rss > maxRSS128 {
				t.Errorf("verify --against: peak RSS %.1f MiB, want at most %.0f MiB", mib(rss), mib(maxRSS128))
			}
			if want := fmt.Sprintf("%s %d", comparedLine, tc.compared); len(lines) != 1 || lines[0] != want {
				t.Errorf("verify --against printed %q, want %q", lines, want)
			}
		})
	}
}

// childPeak runs job in a child process (convertChild) and returns its
// peak RSS in bytes and the lines it printed after it.
func childPeak(t *testing.T, job childJob, env ...string) (uint64, []string) {
	t.Helper()
	rss, lines := testtool.RunChild(t, childEnv, job, env...)
	return uint64(rss), lines
}

// pageSizes returns the largest page of a column in bytes and its number
// of pages, as lancefmt.Describe sums them.
func pageSizes(t *testing.T, src, column string) (largest uint64, pages int) {
	t.Helper()
	ds, err := lancefmt.Open(t.Context(), src, lancefmt.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := lancefmt.Describe(t.Context(), ds, lancefmt.DescribeOptions{Columns: []string{column}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range desc.Columns {
		largest, pages = max(largest, c.LargestPage), pages+c.Pages
	}
	return largest, pages
}

// pylanceCheck compares a conversion's output with its source through
// fixtures/lance14/check.py (pylance 14.0.3, latest version).
func pylanceCheck(t *testing.T, py, src, dst, column string) py14Check {
	t.Helper()
	ds, err := lancefmt.Open(t.Context(), src, lancefmt.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := json.Marshal(map[string]any{"extracted": []string{column}})
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "check.py"), src, fmt.Sprint(ds.Version()), dst, string(opt))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.py: %v\n%s", err, stderr.String())
	}
	var got py14Check
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("check.py output %q: %v", strings.TrimSpace(string(out)), err)
	}
	return got
}

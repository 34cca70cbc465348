package wds

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// genShards writes shards tar files holding members samples between them
// with Python's tarfile (USTAR, as webdataset's TarWriter writes): sample
// i is NNNNNNNNN.jpg, size bytes that differ per sample, and, every
// clsEvery samples (0: never), NNNNNNNNN.cls holding the text "i%10".
// It returns the shards' paths.
func genShards(t *testing.T, dir string, shards, samples, size, clsEvery int) []string {
	t.Helper()
	testtool.Require(t, "python3")
	const script = `
import io, os, sys, tarfile
d, nshards, n, size, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
os.makedirs(d, exist_ok=True)
block = bytes(range(256)) * (size // 256 + 1)
per = (n + nshards - 1) // nshards
i = 0
def add(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o444
    tf.addfile(ti, io.BytesIO(data))
for s in range(nshards):
    with tarfile.open(os.path.join(d, f"train-{s:06d}.tar"), "w", format=tarfile.USTAR_FORMAT) as tf:
        for _ in range(per):
            if i == n:
                break
            add(tf, f"{i:09d}.jpg", (i.to_bytes(8, "little") + block)[:size])
            if every and i % every == 0:
                add(tf, f"{i:09d}.cls", str(i % 10).encode())
            i += 1
`
	cmd := exec.Command("python3", "-c", script, dir, strconv.Itoa(shards), strconv.Itoa(samples), strconv.Itoa(size), strconv.Itoa(clsEvery))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing shards: %v\n%s", err, out)
	}
	paths := make([]string, shards)
	for s := range paths {
		paths[s] = filepath.Join(dir, fmt.Sprintf("train-%06d.tar", s))
	}
	return paths
}

// TestConvertManyRowGroups converts 40,000 samples in 2 shards (a field
// jpg, and an inline field cls in every third sample), so the table has
// row groups of 16Ki rows and a last shorter one, written through the
// allocator outside the heap (checked: every block freed), and checks the
// pack and every row against what Python's tarfile reads.
func TestConvertManyRowGroups(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts 40,000 members")
	}
	dir := t.TempDir()
	paths := genShards(t, dir, 2, 40_000, 64, 3)
	runConversion(t, dir, paths, paths, Options{Inline: []string{"cls"}})
}

// rssChildEnv names the variable that makes the test binary a conversion
// process (see rssChild): its value is the JSON of an rssJob.
const rssChildEnv = "BPCONVERT_TEST_CONVERT_WDS_RSS"

// rssJob is the conversion a child process runs.
type rssJob struct{ Src, Dst string }

// rssChild runs, in the test binary started by peakRSS (before any test),
// the conversion that rssChildEnv names as the CLI does (the plan, with
// its pass over every header, then the run) and prints its samples
// (testtool.ChildMain adds its peak RSS); without the variable it returns.
func rssChild() {
	testtool.ChildMain(rssChildEnv, func(job rssJob, out io.Writer) error {
		ctx := context.Background()
		dst, err := convert.ParseDest(job.Dst, "")
		if err != nil {
			return err
		}
		j, err := NewJob(ctx, job.Src, dst, Options{})
		if err != nil {
			return err
		}
		if _, err := j.Plan(ctx, nil, nil); err != nil {
			return err
		}
		res, err := convertShards(ctx, j.opts, nil)
		if err == nil {
			fmt.Fprintf(out, "samples: %d\n", res.Samples)
		}
		return err
	})
}

// peakRSS converts src into dst in a child process and returns its peak
// RSS in bytes and the samples it wrote.
func peakRSS(t *testing.T, src, dst string) (int64, int64) {
	t.Helper()
	rss, lines := testtool.RunChild(t, rssChildEnv, rssJob{Src: src, Dst: dst})
	var samples int64
	if len(lines) != 1 {
		t.Fatalf("the conversion printed %q, not its samples", lines)
	}
	if _, err := fmt.Sscanf(lines[0], "samples: %d", &samples); err != nil {
		t.Fatalf("the conversion printed %q, not its samples", lines)
	}
	return rss, samples
}

// rssGrowthBudget is what 200,000 more members may add to the peak RSS of
// a conversion of 20,000: the indexes of keys and sample keys (about 9
// bytes a key each, in the plan and in the run), and room for the noise
// of the collector's pacing (both conversions fill whole row groups of
// the table, the phase that peaks).
const rssGrowthBudget = 18 << 20

// TestConvertPeakRSS converts 20,000 and 220,000 one-member samples
// written by Python's tarfile (1 KiB each, 2,000 a shard; the smaller
// set is the first 10 shards of the larger), each in a process of its own
// that plans (reading every header) and converts as the CLI does, and
// bounds how much the larger adds to the peak resident set
// (rssGrowthBudget): memory must stay flat with the member count. Before
// the plan's set of keys and its check for case twins left the heap, the
// samples table's columns were built outside it (in row groups of 16Ki
// rows, keys and references without a dictionary) and the index of sample
// keys went to a file, the 200,000 members added over 30 MiB here.
func TestConvertPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 220 MB of tar shards")
	}
	root := t.TempDir()
	big := filepath.Join(root, "big")
	paths := genShards(t, big, 110, 220_000, 1024, 0)
	small := filepath.Join(root, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths[:10] {
		if err := os.Link(p, filepath.Join(small, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	var peaks [2]int64
	for i, c := range []struct {
		src string
		n   int64
	}{{small, 20_000}, {big, 220_000}} {
		rss, samples := peakRSS(t, c.src, c.src+"-out")
		if samples != c.n {
			t.Fatalf("%s: %d samples, want %d", c.src, samples, c.n)
		}
		peaks[i] = rss
		os.RemoveAll(c.src + "-out")
	}
	grew := peaks[1] - peaks[0]
	t.Logf("peak RSS: %.1f MiB for 220,000 members, %.1f MiB for 20,000 (%.1f MiB more, budget %d MiB)",
		float64(peaks[1])/(1<<20), float64(peaks[0])/(1<<20), float64(grew)/(1<<20), rssGrowthBudget>>20)
	if grew > rssGrowthBudget {
		t.Errorf("200,000 more members added %.1f MiB to the peak RSS, over %d MiB", float64(grew)/(1<<20), rssGrowthBudget>>20)
	}
}

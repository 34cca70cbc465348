package convert

import (
	"fmt"
	"strings"
	"testing"
)

func TestParsePart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Part
		ok   bool
	}{
		{"", Part{}, true}, {"1/1", Part{1, 1}, true}, {"3/8", Part{3, 8}, true},
		{"0/2", Part{}, false}, {"3/2", Part{}, false}, {"1/0", Part{}, false}, {"-1/2", Part{}, false},
		{"1/20000", Part{}, false}, {"1", Part{}, false}, {"a/b", Part{}, false}, {"1/2/3", Part{}, false},
	} {
		got, err := ParsePart(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePart(%q) = %v, %v", tc.in, got, err)
		}
	}
	if p, ok := ParsePartName(PartName(Part{7, 12})); !ok || p != (Part{7, 12}) {
		t.Errorf("ParsePartName: %v %v", p, ok)
	}
	for _, bad := range []string{"part-1-of-2", "part-0003-of-0002", "part-0001-of-0002x", "x"} {
		if _, ok := ParsePartName(bad); ok {
			t.Errorf("ParsePartName(%q) accepted", bad)
		}
	}
}

// TestPartRange checks that the parts of every split cover each item once,
// in order, and stay within one item's size of an equal share of bytes.
func TestPartRange(t *testing.T) {
	t.Parallel()
	cases := [][]int64{
		{}, {5}, {0, 0, 0}, {1, 1, 1, 1, 1, 1, 1}, {100, 1, 1, 1, 1}, {1, 1, 1, 1, 100},
		{7, 3, 9, 1, 4, 4, 8, 2, 6, 5, 0, 3}, {1 << 40, 1 << 40, 3},
	}
	for ci, sizes := range cases {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprint(ci, "/", n), func(t *testing.T) {
				var total, largest int64
				for _, s := range sizes {
					total += s
					largest = max(largest, s)
				}
				next := 0
				for i := 1; i <= n; i++ {
					lo, hi := Part{i, n}.Range(sizes)
					if lo != next || hi < lo {
						t.Fatalf("part %d/%d = [%d,%d), want it to start at %d", i, n, lo, hi, next)
					}
					next = hi
					var bytes int64
					for _, s := range sizes[lo:hi] {
						bytes += s
					}
					if share := total / int64(n); total > 0 && bytes > share+largest+1 {
						t.Errorf("part %d/%d holds %d bytes; an equal share is %d", i, n, bytes, share)
					}
				}
				if next != len(sizes) {
					t.Fatalf("parts end at %d of %d items", next, len(sizes))
				}
			})
		}
	}
	if lo, hi := (Part{}).Range([]int64{1, 2}); lo != 0 || hi != 2 {
		t.Fatalf("whole: [%d,%d)", lo, hi)
	}
}

// TestResolvePart: --part auto takes the first index variable set, from
// 0-based, with N from the value or the same engine's count; every way of
// getting it wrong is an error that names what was read.
func TestResolvePart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec string
		env  map[string]string
		want Part
		from string // want, or the error must contain it
		ok   bool
	}{
		{"2/8", nil, Part{2, 8}, "--part 2/8", true},
		{"", nil, Part{}, "", true},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "0"}, Part{1, 3}, "JOB_COMPLETION_INDEX=0 (Kubernetes Indexed Job), N from --part auto/3", true},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "2"}, Part{3, 3}, "JOB_COMPLETION_INDEX=2", true},
		{"auto", map[string]string{"JOB_COMPLETION_INDEX": "2"}, Part{}, "Kubernetes Indexed Job sets no count of parts: give it as --part auto/N", false},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "3"}, Part{}, "gives part 4, outside 1..3", false},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "-1"}, Part{}, "gives part 0, outside 1..3", false},
		{"auto/3", map[string]string{"JOB_COMPLETION_INDEX": "x"}, Part{}, `JOB_COMPLETION_INDEX="x" is not a whole number`, false},
		{"auto", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "4", "AWS_BATCH_JOB_ARRAY_SIZE": "5"}, Part{5, 5}, "AWS_BATCH_JOB_ARRAY_INDEX=4 (AWS Batch array job), N from AWS_BATCH_JOB_ARRAY_SIZE=5", true},
		{"auto/5", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "5"}, Part{2, 5}, "N from --part auto/5", true},
		{"auto/4", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1", "AWS_BATCH_JOB_ARRAY_SIZE": "5"}, Part{}, "AWS_BATCH_JOB_ARRAY_SIZE=5 says there are 5 parts, not 4", false},
		{"auto", map[string]string{"AWS_BATCH_JOB_ARRAY_INDEX": "1"}, Part{}, "AWS_BATCH_JOB_ARRAY_INDEX is set but AWS_BATCH_JOB_ARRAY_SIZE is not", false},
		{"auto", map[string]string{"BATCH_TASK_INDEX": "0", "BATCH_TASK_COUNT": "2"}, Part{1, 2}, "BATCH_TASK_INDEX=0 (Google Cloud Batch), N from BATCH_TASK_COUNT=2", true},
		{"auto", map[string]string{"CLOUD_RUN_TASK_INDEX": "9", "CLOUD_RUN_TASK_COUNT": "10"}, Part{10, 10}, "CLOUD_RUN_TASK_INDEX=9 (Cloud Run job), N from CLOUD_RUN_TASK_COUNT=10", true},
		{"auto", map[string]string{"CLOUD_RUN_TASK_INDEX": "1", "CLOUD_RUN_TASK_COUNT": "0"}, Part{}, `CLOUD_RUN_TASK_COUNT="0": want a count`, false},
		{"auto", map[string]string{"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "4"}, Part{3, 4},
			"SLURM_ARRAY_TASK_ID=12 less SLURM_ARRAY_TASK_MIN=10 (Slurm job array), N from SLURM_ARRAY_TASK_COUNT=4", true},
		{"auto", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, Part{4, 4}, "SLURM_ARRAY_TASK_ID=3 (Slurm job array)", true},
		{"auto", map[string]string{"SLURM_ARRAY_TASK_ID": "14", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "4"}, Part{}, "gives part 5, outside 1..4", false},
		// The first variable set wins: a Kubernetes pod that also carries a
		// stale Slurm variable uses its own index.
		{"auto/2", map[string]string{"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "7"}, Part{2, 2}, "JOB_COMPLETION_INDEX=1", true},
		{"auto/2", map[string]string{"JOB_COMPLETION_INDEX": " ", "BATCH_TASK_INDEX": "1", "BATCH_TASK_COUNT": "2"}, Part{2, 2}, "BATCH_TASK_INDEX=1", true},
		{"auto", nil, Part{}, "no part index in the environment (tried JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, BATCH_TASK_INDEX, CLOUD_RUN_TASK_INDEX, SLURM_ARRAY_TASK_ID)", false},
		{"auto/0", map[string]string{"JOB_COMPLETION_INDEX": "0"}, Part{}, "want auto or auto/N", false},
		{"auto/x", nil, Part{}, "want auto or auto/N", false},
		{"auto/20000", nil, Part{}, "want auto or auto/N", false},
		{"automatic", nil, Part{}, "want I/N", false},
	} {
		got, from, err := ResolvePart(tc.spec, func(k string) string { return tc.env[k] })
		if tc.ok {
			if err != nil || got != tc.want || !strings.Contains(from, tc.from) {
				t.Errorf("ResolvePart(%q, %v) = %v, %q, %v; want %v, %q", tc.spec, tc.env, got, from, err, tc.want, tc.from)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.from) {
			t.Errorf("ResolvePart(%q, %v) = %v, %q, %v; want an error with %q", tc.spec, tc.env, got, from, err, tc.from)
		}
	}
}

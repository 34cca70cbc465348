package convert

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Part names one of N parts of a conversion split across processes
// (--part I/N): each part converts a deterministic, contiguous share of the
// work, balanced by bytes, into its own directory beside the destination,
// and Finalize joins the parts into the destination. The zero Part is the
// whole conversion.
type Part struct {
	// I is the part's number, from 1; N the number of parts.
	I, N int
}

// MaxParts bounds N.
const MaxParts = 10000

// ParsePart reads "I/N" (1 <= I <= N <= MaxParts). The empty string is the
// whole conversion.
func ParsePart(s string) (Part, error) {
	if s == "" {
		return Part{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > MaxParts || i < 1 || i > n {
		return Part{}, fmt.Errorf("part %q: want I/N with 1 <= I <= N <= %d, such as 2/8", s, MaxParts)
	}
	return Part{I: i, N: n}, nil
}

// Whole reports whether p is the whole conversion (no --part).
func (p Part) Whole() bool { return p.N == 0 }

// String returns "I/N", or "" for the whole conversion.
func (p Part) String() string {
	if p.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", p.I, p.N)
}

// Range returns the items [lo, hi) of this part, for items of the given
// sizes in their conversion order: item j belongs to the part in whose
// share of the total bytes it starts, so the parts are contiguous, cover
// every item once, and carry about equal bytes. Items of size zero (or a
// total of zero) are shared out by count.
func (p Part) Range(sizes []int64) (lo, hi int) {
	if p.Whole() {
		return 0, len(sizes)
	}
	var total int64
	for _, s := range sizes {
		total += max(s, 0)
	}
	owner := func(j int, before int64) int {
		if total == 0 {
			return j * p.N / len(sizes)
		}
		// before*N/total without overflow for totals up to 2^63/N.
		return int(before / ((total + int64(p.N) - 1) / int64(p.N)))
	}
	lo, hi = -1, -1
	var before int64
	for j, s := range sizes {
		if o := owner(j, before); o == p.I-1 {
			if lo < 0 {
				lo = j
			}
			hi = j + 1
		}
		before += max(s, 0)
	}
	if lo < 0 {
		// An empty part sits where its share would start.
		before = 0
		for j, s := range sizes {
			if owner(j, before) >= p.I-1 {
				return j, j
			}
			before += max(s, 0)
		}
		return len(sizes), len(sizes)
	}
	return lo, hi
}

// PartsSuffix ends the name of the directory that holds a destination's
// parts, beside it: ".DST.bpconvert-parts".
const PartsSuffix = ".bpconvert-parts"

// partsDir returns the directory holding the parts of dst, a local
// directory.
func partsDir(dst string) string {
	return filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+PartsSuffix)
}

// partDir returns the directory that part p of dst is committed to.
func partDir(dst string, p Part) string {
	return filepath.Join(partsDir(dst), PartName(p))
}

// PartName is the directory name of part p: part-0002-of-0008.
func PartName(p Part) string { return fmt.Sprintf("part-%04d-of-%04d", p.I, p.N) }

// ParsePartName reads a PartName.
func ParsePartName(name string) (Part, bool) {
	var p Part
	if _, err := fmt.Sscanf(name, "part-%04d-of-%04d", &p.I, &p.N); err != nil || PartName(p) != name || p.I < 1 || p.I > p.N {
		return Part{}, false
	}
	return p, true
}

// indexVar is an environment variable that an engine running N copies of
// one task sets to the task's 0-based index, with the variable (if any)
// that the same engine sets to N.
type indexVar struct {
	name, count, engine string
}

// indexVars are the variables --part auto reads, in the order tried.
var indexVars = []indexVar{
	{"JOB_COMPLETION_INDEX", "", "Kubernetes Indexed Job"},
	{"AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE", "AWS Batch array job"},
	{"BATCH_TASK_INDEX", "BATCH_TASK_COUNT", "Google Cloud Batch"},
	{"CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT", "Cloud Run job"},
	{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "Slurm job array"},
}

// slurmMin is the variable holding the first task ID of a Slurm array,
// which SLURM_ARRAY_TASK_ID is offset by.
const slurmMin = "SLURM_ARRAY_TASK_MIN"

// IndexVariables lists the environment variables that ResolvePart reads a
// part's index from, in the order it tries them.
func IndexVariables() []string {
	out := make([]string, len(indexVars))
	for i, v := range indexVars {
		out[i] = v.name
	}
	return out
}

// ResolvePart reads a --part value: "I/N" (see ParsePart), or "auto" or
// "auto/N", which take the part from the environment that a batch engine
// gives each of N copies of a task: the index from the first variable of
// IndexVariables that getenv returns non-empty (0-based, so part index+1;
// SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN), N from the value or else
// from the count variable of the same engine (AWS_BATCH_JOB_ARRAY_SIZE,
// BATCH_TASK_COUNT, CLOUD_RUN_TASK_COUNT, SLURM_ARRAY_TASK_COUNT;
// Kubernetes sets none, so auto/N is needed there). from says where the
// part came from, for the run's summary: "--part 2/8", or
// "JOB_COMPLETION_INDEX=1 (Kubernetes Indexed Job), N from --part auto/8".
func ResolvePart(s string, getenv func(string) string) (p Part, from string, err error) {
	spec, nText, hasN := strings.Cut(s, "/")
	if spec != "auto" {
		p, err := ParsePart(s)
		if err != nil || p.Whole() {
			return p, "", err
		}
		return p, "--part " + p.String(), nil
	}
	n := 0
	if hasN {
		if n, err = strconv.Atoi(nText); err != nil || n < 1 || n > MaxParts {
			return Part{}, "", fmt.Errorf("part %q: want auto or auto/N with 1 <= N <= %d, such as auto/8", s, MaxParts)
		}
	}
	for _, v := range indexVars {
		val := strings.TrimSpace(getenv(v.name))
		if val == "" {
			continue
		}
		idx, err := strconv.Atoi(val)
		if err != nil {
			return Part{}, "", fmt.Errorf("part %s: %s=%q is not a whole number", s, v.name, val)
		}
		from = fmt.Sprintf("%s=%d (%s)", v.name, idx, v.engine)
		if v.name == "SLURM_ARRAY_TASK_ID" {
			if m := strings.TrimSpace(getenv(slurmMin)); m != "" {
				lo, err := strconv.Atoi(m)
				if err != nil {
					return Part{}, "", fmt.Errorf("part %s: %s=%q is not a whole number", s, slurmMin, m)
				}
				idx -= lo
				from = fmt.Sprintf("%s=%s less %s=%d (%s)", v.name, val, slurmMin, lo, v.engine)
			}
		}
		count := ""
		if v.count != "" {
			count = strings.TrimSpace(getenv(v.count))
		}
		switch {
		case hasN && count != "" && count != strconv.Itoa(n):
			return Part{}, "", fmt.Errorf("part %s: %s=%s says there are %s parts, not %d", s, v.count, count, count, n)
		case hasN:
			from += ", N from --part " + s
		case count != "":
			if n, err = strconv.Atoi(count); err != nil || n < 1 || n > MaxParts {
				return Part{}, "", fmt.Errorf("part %s: %s=%q: want a count from 1 to %d", s, v.count, count, MaxParts)
			}
			from += fmt.Sprintf(", N from %s=%d", v.count, n)
		case v.count == "":
			return Part{}, "", fmt.Errorf("part %s: %s sets no count of parts: give it as --part auto/N", s, v.engine)
		default:
			return Part{}, "", fmt.Errorf("part %s: %s is set but %s is not: give the count as --part auto/N", s, v.name, v.count)
		}
		if idx < 0 || idx >= n {
			return Part{}, "", fmt.Errorf("part %s: %s gives part %d, outside 1..%d", s, from, idx+1, n)
		}
		return Part{I: idx + 1, N: n}, from, nil
	}
	return Part{}, "", fmt.Errorf("part %s: no part index in the environment (tried %s)", s, strings.Join(IndexVariables(), ", "))
}

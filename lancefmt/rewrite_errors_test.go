package lancefmt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture copies the fixture dataset name into a temporary directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name+".lance")
	if err := copyTree(t.Context(), LocalStorage{}, filepath.Join(fixtures(t), name+".lance"), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// firstDataFile returns the path of the first data file of fragment 0.
func firstDataFile(t *testing.T, d *Dataset) string {
	t.Helper()
	fr := d.Fragments()[0]
	p, err := d.dataFilePath(&fr.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRewriteErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		dataset string
		// break damages the dataset copy after Open; it may return a
		// replacement list.
		breakIt func(t *testing.T, d *Dataset)
		replace []string
		plan    bool // the error comes from PlanRewrite
		want    []string
		is      error
	}{
		{
			name: "truncated data file", dataset: "rw_2_1", replace: []string{"img"},
			breakIt: func(t *testing.T, d *Dataset) {
				p := firstDataFile(t, d)
				st, _ := os.Stat(p)
				if err := os.Truncate(p, st.Size()/2); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"fragment 0", ".lance", "LANC"},
		},
		{
			name: "file version 2.3 in the footer", dataset: "rw_2_2", replace: []string{"img"},
			breakIt: func(t *testing.T, d *Dataset) {
				p := firstDataFile(t, d)
				f, err := os.OpenFile(p, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				st, _ := f.Stat()
				if _, err := f.WriteAt([]byte{2, 0, 3, 0}, st.Size()-8); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"fragment 0", "file version 2.3 is not supported"},
		},
		{
			name: "file version 2.3 in the manifest", dataset: "rw_2_2", replace: []string{"img"}, plan: true,
			breakIt: func(t *testing.T, d *Dataset) { d.manifest.Fragments[1].Files[0].Minor = 3 },
			want:    []string{"fragment 1", "file version 2.3 is not supported"},
		},
		{
			name: "manifest gone", dataset: "rw_2_0", replace: []string{"img"}, plan: true,
			breakIt: func(t *testing.T, d *Dataset) {
				if err := os.RemoveAll(filepath.Join(d.Dir(), "_versions")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"_versions"},
		},
		{
			name: "deletion file gone", dataset: "rw_2_0", replace: []string{"img"},
			breakIt: func(t *testing.T, d *Dataset) {
				if err := os.RemoveAll(filepath.Join(d.Dir(), "_deletions")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"fragment 0", ".arrow"},
		},
		{name: "legacy dictionary column", dataset: "types_legacy", replace: []string{"bin"}, plan: true, want: []string{`column "dict"`, "cannot be transcoded to file version 2.0"}},
		{name: "legacy packed struct", dataset: "optin_legacy", replace: nil, plan: true, want: []string{`column "pk"`, "packed struct cannot be transcoded"}},
		{name: "kept blob column", dataset: "blob2_2_2", replace: nil, plan: true, want: []string{`blob column "blob" must be replaced`}},
		{name: "unknown column", dataset: "rw_2_1", replace: []string{"nope"}, plan: true, want: []string{`no top-level column "nope"`}},
		{name: "nested column", dataset: "types_2_1", replace: []string{"st.x"}, plan: true, want: []string{`no top-level column "st.x"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, tc.dataset)
			d, err := Open(ctx, dir, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.breakIt != nil {
				tc.breakIt(t, d)
			}
			reps := refReplacements(d, tc.replace)
			_, perr := d.PlanRewrite(tc.replace)
			if tc.plan != (perr != nil) {
				t.Fatalf("PlanRewrite error %v, want one: %v", perr, tc.plan)
			}
			dst := filepath.Join(t.TempDir(), "out")
			_, err = d.Rewrite(ctx, dst, RewriteOptions{Replace: reps})
			if err == nil {
				t.Fatal("Rewrite succeeded")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "lance: "+dir) {
				t.Errorf("error %q does not name the dataset", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestRewriteMissingVersion(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), filepath.Join(fixtures(t), "rw_2_1.lance"), OpenOptions{Version: 99})
	if !errors.Is(err, ErrVersionNotFound) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Open of version 99: %v", err)
	}
}

func TestRewriteRefusals(t *testing.T) {
	t.Parallel()
	d, err := Open(context.Background(), filepath.Join(fixtures(t), "rw_2_1.lance"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	short := func(ctx context.Context, frag, rows uint64) ([]string, []bool, error) {
		return []string{"a"}, []bool{true}, nil
	}
	failing := func(ctx context.Context, frag, rows uint64) ([]string, []bool, error) {
		return nil, nil, errors.New("no pack for this fragment")
	}
	cases := []struct {
		name string
		ctx  context.Context
		dst  string
		reps []Replacement
		want string
		is   error
	}{
		{name: "cancelled", ctx: cancelled, reps: []Replacement{{Column: "img", Values: refValues(d, "img")}}, is: context.Canceled},
		{name: "destination not empty", dst: nonEmpty, reps: []Replacement{{Column: "img", Values: refValues(d, "img")}}, want: "is not empty"},
		{name: "too few values", reps: []Replacement{{Column: "img", Values: short}}, want: "fragment 0"},
		{name: "values fail", reps: []Replacement{{Column: "img", Values: failing}}, want: "no pack for this fragment"},
		{name: "no values function", reps: []Replacement{{Column: "img"}}, want: "no Values function"},
		{name: "replaced twice", reps: []Replacement{{Column: "img", Values: short}, {Column: "img", Values: short}}, want: "replaced twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			dst := tc.dst
			if dst == "" {
				dst = filepath.Join(t.TempDir(), "out")
			}
			_, err := d.Rewrite(ctx, dst, RewriteOptions{Replace: tc.reps})
			if err == nil {
				t.Fatal("Rewrite succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

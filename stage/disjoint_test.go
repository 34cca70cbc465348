package stage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckDisjoint(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "t.parquet"), nil, 0o644)
	os.Symlink(src, filepath.Join(root, "link"))
	tests := []struct {
		src, dst string
		overlap  bool
	}{
		{"src", "out", false},
		{"src", "src", true},
		{"src", "src/out", true},
		{"src/sub", "src", true},
		{"src/t.parquet", "src/out", true}, // a file's directory counts
		{"src/t.parquet", "out", false},
		{"link", "src/new/deeper", true}, // symlinks resolved, dst not yet existing
		{"src", "srcfoo", false},         // a name prefix is not containment
	}
	for _, tc := range tests {
		err := CheckDisjoint(filepath.Join(root, tc.src), filepath.Join(root, tc.dst))
		if errors.Is(err, ErrOverlap) != tc.overlap {
			t.Errorf("CheckDisjoint(%s, %s) = %v, want overlap %v", tc.src, tc.dst, err, tc.overlap)
		}
	}
}

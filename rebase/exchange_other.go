//go:build !linux

package rebase

import (
	"fmt"
	"os"
	"path/filepath"
)

// exchange swaps the directories a and b with two renames (the system has
// no exchanging rename): b is missing between them, and a run cut short
// there leaves the old directory under oldPrefix, which the next run
// puts back (see removeTemps).
func exchange(a, b string) error {
	old := filepath.Join(filepath.Dir(b), oldPrefix+filepath.Base(b))
	if err := os.Rename(b, old); err != nil {
		return fmt.Errorf("exchange %s and %s: %w", a, b, err)
	}
	if err := os.Rename(a, b); err != nil {
		os.Rename(old, b)
		return fmt.Errorf("exchange %s and %s: %w", a, b, err)
	}
	return os.Rename(old, a)
}

package rebase

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories a and b in one rename: a reader that
// opens b sees the old directory or the new one, never none.
func exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return fmt.Errorf("exchange %s and %s: %w", a, b, err)
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bpconvert/bpconvert/convert"
)

// checkDestParent refuses a local destination that cannot be a directory
// because a part of its path is a file (pack SRC FILE/out): the user's
// mistake, a usage error (exit 2) that names the path, found before any
// work. The nearest part of the path that exists must be a directory; a
// destination that exists itself is for the later checks (empty, or a
// finished run's output). d is the destination parsed (convert.ParseDest),
// dst as the user named it, for the message.
func checkDestParent(command string, d convert.Dest, dst string) error {
	if d.Remote() {
		return nil
	}
	clean := d.Location()
	for p := clean; ; {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return nil
		case err == nil && p != clean:
			return &usageError{msg: fmt.Sprintf("%s: destination %s: %s is a file, not a directory", command, dst, p),
				hint: "the destination is created as a new directory: choose a path whose parent is a directory"}
		case err == nil:
			return nil // DST itself is a file: stage.CheckDest says so
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return nil // unreadable: the later checks report it with its cause
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

// inBucket reports whether a location named on the command line is in
// object storage, as convert.ParseDest parses it.
func inBucket(loc string) bool {
	d, err := convert.ParseDest(loc, "")
	return err == nil && d.Remote()
}

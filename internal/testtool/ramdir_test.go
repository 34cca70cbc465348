package testtool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRAMDir: a small request gets a directory in memory where /dev/shm is
// a tmpfs with room, one larger than the machine's memory an ordinary
// temporary directory; both are writable and gone when the test ends.
func TestRAMDir(t *testing.T) {
	var dirs []string
	t.Run("small", func(t *testing.T) {
		d := RAMDir(t, 1<<20)
		if ramRoom(ramRoot) > 4<<30 && memAvailable() > 8<<30 && !strings.HasPrefix(d, ramRoot+"/") {
			t.Errorf("RAMDir(1 MiB) = %s, not under %s, which has room", d, ramRoot)
		}
		if err := os.WriteFile(filepath.Join(d, "x"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	})
	t.Run("huge", func(t *testing.T) {
		d := RAMDir(t, 1<<60)
		if strings.HasPrefix(d, ramRoot+"/") {
			t.Errorf("RAMDir(1 EiB) = %s", d)
		}
		if err := os.WriteFile(filepath.Join(d, "x"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	})
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is left after its test: %v", d, err)
		}
	}
	if len(dirs) != 2 {
		t.Fatalf("got %d directories", len(dirs))
	}
}

// Package lerobottest holds test helpers that read what a LeRobot
// conversion wrote: its pack set and its video index. It is for the tests
// of convert/lerobot and of the CLI, not for programs; it sits beside the
// converter it serves so that internal/ never imports a higher layer.
package lerobottest

import (
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/packcore"
)

// LeRobotOutput opens the packs of the LeRobot conversion written to dst
// (dst/media, closed when the test ends) and reads its video_index.json;
// either failing fails the test.
func LeRobotOutput(t testing.TB, dst string) (*packcore.Set, *videoindex.Index) {
	t.Helper()
	set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	ix, err := videoindex.ReadFile(filepath.Join(dst, videoindex.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return set, ix
}

//go:build !cgo

package lerobot

import (
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
)

// testEngine skips t when it needs to read camera files (needed): built
// without cgo, this test binary has no libav engine. Otherwise it returns
// nil, which is all Inspect needs to refuse metadata before any video is
// read.
func testEngine(t testing.TB, needed bool) video.Engine {
	t.Helper()
	if needed {
		t.Skip("needs the libav video engine; this test binary was built without cgo")
	}
	return nil
}

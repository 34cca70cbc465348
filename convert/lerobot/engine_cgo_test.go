//go:build cgo

package lerobot

import (
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/lerobot/video/libav"
)

// testEngine returns the libav engine: this test binary links cgo.
func testEngine(t testing.TB, needed bool) video.Engine { return libav.Engine{} }

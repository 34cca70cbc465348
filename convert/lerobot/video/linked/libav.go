//go:build lerobot

package linked

import (
	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/lerobot/video/libav"
)

// Engine returns libav's engine: this build links it.
func Engine() video.Engine { return libav.Engine{} }

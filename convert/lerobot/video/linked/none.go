//go:build !lerobot

package linked

import "github.com/bpconvert/bpconvert/convert/lerobot/video"

// Engine returns nil: this build links no video engine.
func Engine() video.Engine { return nil }

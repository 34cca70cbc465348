package decode

import "github.com/bpconvert/bpconvert/lancefmt/internal/wire"

// errCorrupt is wrapped by every decoding error caused by malformed input.
var errCorrupt = wire.ErrCorrupt

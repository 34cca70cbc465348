package packcore

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyBytes is the longest member name a zip header can record.
const MaxKeyBytes = 0xFFFF

// ErrInvalidKey is wrapped by every key validation error.
var ErrInvalidKey = errors.New("invalid key")

// ErrDuplicateKey is returned when a key was already added to a writer or
// appears twice in a pack set.
var ErrDuplicateKey = errors.New("duplicate key")

// KeyError reports a refused or conflicting member key.
type KeyError struct {
	Key    string
	Reason string
	Err    error // ErrInvalidKey or ErrDuplicateKey
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("key %q: %s", cutName(e.Key), e.Reason)
}

func (e *KeyError) Unwrap() error { return e.Err }

// ValidateKey reports whether key is usable as a member name: a relative
// POSIX path of non-empty segments other than "." and "..", valid UTF-8,
// without backslashes, "::", control characters, leading or trailing
// whitespace, and at most MaxKeyBytes bytes long.
func ValidateKey(key string) error {
	bad := func(reason string) error {
		return &KeyError{Key: key, Reason: reason, Err: ErrInvalidKey}
	}
	switch {
	case key == "":
		return bad("empty key")
	case len(key) > MaxKeyBytes:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyBytes))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.TrimSpace(key) != key:
		return bad("leading or trailing whitespace")
	case strings.Contains(key, `\`):
		return bad(`contains a backslash; keys are relative POSIX paths`)
	case strings.HasPrefix(key, "/"):
		return bad("absolute path; keys are relative POSIX paths")
	case strings.Contains(key, "::"):
		return bad(`contains "::", which separates key and shard in references`)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return bad(fmt.Sprintf("contains control character %U", r))
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad(`contains an empty, "." or ".." path segment`)
		}
	}
	return nil
}

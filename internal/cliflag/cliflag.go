// Package cliflag holds the flag values and annotations that the CLI and
// the converters' own flag declarations share: a repeatable string flag,
// and the values of a flag that shell completion offers.
package cliflag

import (
	"strings"

	flag "github.com/spf13/pflag"
)

// ChoicesAnnotation marks a flag's values (Choices), which shell
// completion offers.
const ChoicesAnnotation = "bpconvert_choices"

// Choices records the values flag name of fs takes, for shell completion.
func Choices[T ~string](fs *flag.FlagSet, name string, values ...T) {
	vals := make([]string, 0, len(values))
	for _, v := range values {
		vals = append(vals, string(v))
	}
	fs.SetAnnotation(name, ChoicesAnnotation, vals)
}

// Strings is a repeatable string flag: each use adds one value.
type Strings []string

// String gives the values, comma-separated.
func (s *Strings) String() string { return strings.Join(*s, ",") }

// Type is the placeholder help shows when the usage names none.
func (s *Strings) Type() string { return "NAME" }

// Set adds v.
func (s *Strings) Set(v string) error {
	*s = append(*s, v)
	return nil
}

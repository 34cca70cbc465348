package testtool

import (
	"strings"
	"testing"
)

// TestCLIKnowsNoConverter keeps the converters behind their list: the CLI
// (cmd/bpconvert, tests aside, with and without the lerobot tag) reaches
// every converter through convert/formats and imports none of the
// converter packages formats lists, so adding a converter is its package
// and its Format, not a command file as well.
func TestCLIKnowsNoConverter(t *testing.T) {
	t.Parallel()
	converters := map[string]bool{}
	for _, imp := range strings.Fields(goList(t, "-f", "{{join .Imports \" \"}}", "./convert/formats")[0]) {
		if rest, ok := strings.CutPrefix(imp, module+"convert/"); ok && !strings.Contains(rest, "/") {
			converters[imp] = true
		}
	}
	if len(converters) < 4 {
		t.Fatalf("convert/formats imports %d converter packages; want the four at least: %v", len(converters), converters)
	}
	for _, tags := range []string{"", "lerobot"} {
		for _, line := range goList(t, "-tags", tags, "-f", "{{join .Imports \" \"}}", "./cmd/bpconvert") {
			for _, imp := range strings.Fields(line) {
				if converters[imp] {
					t.Errorf("cmd/bpconvert (tags %q) imports %s: the CLI reaches a converter through its Format", tags, imp)
				}
			}
		}
	}
}

package cliflag

import (
	"slices"
	"testing"

	flag "github.com/spf13/pflag"
)

func TestStringsRepeat(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--column", "a"}, []string{"a"}},
		{[]string{"--column", "a", "--column=b,c"}, []string{"a", "b,c"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var s Strings
		fs.Var(&s, "column", "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s, c.want) {
			t.Errorf("%q: got %q, want %q", c.args, s, c.want)
		}
	}
}

func TestChoicesAnnotate(t *testing.T) {
	type mode string
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("video", "copy", "")
	Choices(fs, "video", mode("copy"), mode("skip"))
	if got := fs.Lookup("video").Annotations[ChoicesAnnotation]; !slices.Equal(got, []string{"copy", "skip"}) {
		t.Errorf("annotation %q", got)
	}
}

package lance

import (
	"context"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/cliflag"
	flag "github.com/spf13/pflag"
)

// Flags declares convert-lance's own flags on fs (beside those every
// converter takes) and returns what makes its job once they are parsed.
func Flags(fs *flag.FlagSet) convert.JobFlags {
	var columns cliflag.Strings
	fs.Var(&columns, "column", "column to extract into packs, `NAME` (repeatable; default: every blob column)")
	version := fs.Uint64("dataset-version", 0, "convert dataset version `N` (default: the latest); --version N is its deprecated spelling")
	external := fs.String("external", string(ExternalCopy), "external blobs: `MODE` copy (into the packs) or keep (the URI stays the cell's value)")
	cliflag.Choices(fs, "external", ExternalCopy, ExternalKeep)
	return convert.JobFlags{Make: func(ctx context.Context, r convert.Request) (convert.Job, error) {
		s := r.Options.Source
		src := s.String()
		if s.Remote() {
			src = s.Location()
		}
		job, err := NewJob(ctx, src, r.Dest, Options{
			Options:  r.Options,
			Version:  *version,
			Columns:  columns,
			External: External(*external),
		})
		if err != nil && s.Remote() {
			return nil, bucketError("convert-lance", src, err)
		}
		if err != nil {
			return nil, err
		}
		return job, nil
	}}
}

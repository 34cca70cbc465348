package dsverify

// Comparer is how verify --against compares a dataset that one converter
// wrote with a source in that converter's format, reading the source
// independently of the converter (docs/architecture.md, the verify
// principle). The converters'
// list (convert/formats) names each converter's Comparer, and Verify tries
// those that Options.Comparers lists, in order, taking the first that
// claims the dataset and source.
//
// The zero Comparer claims nothing.
type Comparer struct {
	// claims reports whether the dataset v reads is one this format's
	// converter wrote and src a source of it to compare with.
	claims func(v *verifier, src string) bool
	// compare compares every payload of src with the member that holds it.
	compare func(v *verifier, src string) error
}

// IsZero reports whether c is the zero Comparer, which compares nothing.
func (c Comparer) IsZero() bool { return c.claims == nil || c.compare == nil }

// The converters' comparisons. Each claims only what none of the others
// does, so the order they are tried in does not matter: a dataset with a
// Lance table convert-lance wrote, compared with a Lance dataset, is
// Lance's; one compared with a LeRobot dataset is LeRobot's (whose tables
// also carry convert-parquet's record); one with a samples table is
// WebDataset's; the rest with a table convert-parquet rewrote is Parquet's.
var (
	// WebDataset compares with the tar shards a samples table was written
	// from.
	WebDataset = Comparer{
		claims: func(v *verifier, src string) bool {
			return v.wds != nil && !v.lanceSource(src) && !v.leRobotSource(src)
		},
		compare: (*verifier).againstWDS,
	}
	// Parquet compares with the parquet tables (or Hugging Face save_to_disk
	// Arrow files) convert-parquet rewrote.
	Parquet = Comparer{
		claims: func(v *verifier, src string) bool {
			return v.hasParquetRecord() && v.wds == nil && !v.lanceSource(src) && !v.leRobotSource(src)
		},
		compare: (*verifier).againstParquet,
	}
	// LeRobot compares with a LeRobot dataset: camera files packed whole,
	// and the frames extracted from its tables.
	LeRobot = Comparer{
		claims: func(v *verifier, src string) bool {
			return !v.lanceSource(src) && v.leRobotSource(src)
		},
		compare: (*verifier).againstLeRobot,
	}
	// Lance compares with the Lance dataset convert-lance read, at the
	// version it converted.
	Lance = Comparer{
		claims:  (*verifier).lanceSource,
		compare: (*verifier).againstLance,
	}
)

// lanceSource reports whether the dataset has a Lance table convert-lance
// wrote and src is a Lance dataset (or in object storage).
func (v *verifier) lanceSource(src string) bool {
	return len(v.lc) > 0 && v.sourceIsLance(true)
}

// sourceIsLance reports whether the source is a directory that holds a
// Lance dataset's _versions; one in object storage is taken for one when
// inBucket is set (opening it then says what is wrong).
func (v *verifier) sourceIsLance(inBucket bool) bool {
	p, file, err := v.source()
	if err != nil || file != "" {
		return false
	}
	if p.t.Remote() {
		return inBucket
	}
	d, _ := p.t.IsDir("_versions")
	return d
}

// leRobotSource reports whether src is a LeRobot dataset, asking once.
func (v *verifier) leRobotSource(src string) bool {
	if v.isLeRobot == nil {
		is := v.isLeRobotDataset()
		v.isLeRobot = &is
	}
	return *v.isLeRobot
}

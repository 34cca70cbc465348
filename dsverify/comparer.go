package dsverify

// Comparer is how verify --against compares a dataset that one converter
// wrote with a source in that converter's format, reading the source
// independently of the converter (docs/architecture.md, the verify
// principle). Each converter's Comparer lives in a package of the
// converter's directory that does not import the converter
// (convert/wds/wdsverify, for example), built on the exported methods of
// Check. The converters' list (convert/formats) names each converter's
// Comparer, and Verify tries those that Options.Comparers lists, in order,
// taking the first that claims the dataset and source.
//
// Each Comparer claims only what none of the others does, so the order
// they are tried in does not matter. What decides between them is asked
// of Check, in this order: a dataset with a Lance table convert-lance
// wrote, compared with a Lance dataset, is Lance's (Check.LanceSource);
// else one compared with a LeRobot dataset is LeRobot's
// (Check.LeRobotSource); else one with a samples table is WebDataset's;
// else one with a table convert-parquet rewrote is Parquet's.
//
// The zero Comparer claims nothing.
type Comparer struct {
	// Claims reports whether the dataset c reads is one this format's
	// converter wrote and src a source of it to compare with.
	Claims func(c *Check, src string) bool
	// Compare compares every payload of src with the member that holds
	// it, setting the report's Against and recording every mismatch as a
	// problem; the error is for a comparison that could not run.
	Compare func(c *Check, src string) error
}

// IsZero reports whether c is the zero Comparer, which compares nothing.
func (c Comparer) IsZero() bool { return c.Claims == nil || c.Compare == nil }

// lanceSource reports whether the dataset has a Lance table convert-lance
// wrote and src is a Lance dataset (or in object storage).
func (v *Check) lanceSource() bool {
	return len(v.Records("lance")) > 0 && v.sourceIsLance(true)
}

// sourceIsLance reports whether the source is a directory that holds a
// Lance dataset's _versions; one in object storage is taken for one when
// inBucket is set (opening it then says what is wrong).
func (v *Check) sourceIsLance(inBucket bool) bool {
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

// leRobotSource reports whether the source is a LeRobot dataset (in the
// parquet layout or stored as Lance: a local directory or a prefix in a
// bucket holding meta/info.json), asking once.
func (v *Check) leRobotSource() bool {
	if v.isLeRobot == nil {
		p, file, err := v.source()
		is := err == nil && file == "" && p.file("meta/info.json").exists()
		v.isLeRobot = &is
	}
	return *v.isLeRobot
}

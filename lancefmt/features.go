package lancefmt

import (
	"fmt"
	"math/bits"
	"strings"
)

// Reader feature flags of the table format (Manifest.reader_feature_flags),
// by bit, as Lance 14.0.2 defines them. That release reads datasets with
// bits 0-5, 7, 8, 10, 11 and 14 set and refuses bits 6, 9, 12 and 13 (bit
// 15 must agree with a field id high-water mark).
const (
	flagDeletionFiles       = 1 << 0
	flagStableRowIDs        = 1 << 1
	flagUseV2Format         = 1 << 2
	flagTableConfig         = 1 << 3
	flagMultiBasePaths      = 1 << 4
	flagNoTxnFile           = 1 << 5
	flagOverlays            = 1 << 6
	flagCoveredIndex        = 1 << 7
	flagMixedFileVersions   = 1 << 8
	flagReuseStableRowIDs   = 1 << 9
	flagFragmentReuseIndex  = 1 << 10
	flagSemanticTypes       = 1 << 11
	flagManagedBlobs        = 1 << 14
	flagNonReusableFieldIDs = 1 << 15
	knownReaderFlags        = flagDeletionFiles | flagStableRowIDs | flagUseV2Format | flagTableConfig | flagMultiBasePaths | flagNoTxnFile | flagMixedFileVersions | flagManagedBlobs
	pairedFlags             = flagMixedFileVersions
	manifestFooterBytes     = 16
)

// readerFeature describes one reader feature flag this package refuses.
type readerFeature struct {
	name string // in words
	// about tells where the flag comes from and what a user can do besides
	// reading an older version.
	about string
}

// refusedFeatures names the reader feature flags this package refuses.
var refusedFeatures = map[uint64]readerFeature{
	flagOverlays: {"data overlay files",
		"an unstable Lance feature that released builds of Lance 14 refuse as well"},
	flagCoveredIndex: {"indices with covering columns",
		"set when an index carries columns it is not keyed on; Lance 14.0.2 reads it"},
	flagReuseStableRowIDs: {"a fragment reuse index over stable row ids",
		"reserved; Lance 14.0.2 refuses it as well"},
	flagFragmentReuseIndex: {"a tagged fragment reuse index",
		"known to Lance 14; this reader does not interpret fragment reuse indices"},
	flagSemanticTypes: {"semantic column types",
		"meant for tables created at file version 2.3, which this reader does not read either; write the table again with data_storage_version=\"2.2\""},
	1 << 12: {"a reserved table feature (fragment trees or independently declared covering fields)",
		"Lance 14.0.2 refuses it as well"},
	1 << 13: {"a reserved table feature (fragment trees or independently declared covering fields)",
		"Lance 14.0.2 refuses it as well"},
	flagNonReusableFieldIDs: {"non-reusable field ids",
		"known to Lance 14.0.2, which checks it against a field id high-water mark"},
}

// UnsupportedFeaturesError is returned by Open for a version whose manifest
// sets reader feature flags this package does not support.
type UnsupportedFeaturesError struct {
	Dir      string
	Version  uint64 // the version asked for
	Flags    uint64 // the flags this package refuses
	Features []string
	// Readable is the newest earlier version whose manifest sets no flag
	// this package refuses, 0 when there is none.
	Readable uint64
}

func (e *UnsupportedFeaturesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lance: %s: version %d uses %s, which this reader does not support", e.Dir, e.Version, strings.Join(e.Features, "; "))
	if e.Readable != 0 {
		fmt.Fprintf(&b, "; version %d, the newest before it without %s, can be read", e.Readable, pronoun(len(e.Features)))
	} else {
		b.WriteString("; no earlier version is free of " + pronoun(len(e.Features)))
	}
	return b.String()
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// describeFeatures names, in words, each flag set in flags, with where it
// comes from and what the user can do.
func describeFeatures(flags uint64) []string {
	var out []string
	var unnamed []string
	for f := flags; f != 0; f &= f - 1 {
		bit := uint64(1) << bits.TrailingZeros64(f)
		if rf, ok := refusedFeatures[bit]; ok {
			out = append(out, rf.name+" ("+rf.about+")")
			continue
		}
		unnamed = append(unnamed, fmt.Sprint(bits.TrailingZeros64(f)))
	}
	if len(unnamed) > 0 {
		out = append(out, fmt.Sprintf("table features newer than Lance 14.0.2 (reader feature bit %s, unknown to this reader; a newer bpconvert may read them)", strings.Join(unnamed, ", ")))
	}
	return out
}

// unsupportedFlags returns the reader feature flags of m this package does
// not support.
func (m *Manifest) unsupportedFlags() uint64 {
	return m.ReaderFeatureFlags &^ knownReaderFlags
}

// checkPaired refuses a manifest whose paired reader and writer flags
// disagree (Lance treats that as a corrupt manifest).
func (m *Manifest) checkPaired() error {
	if (m.ReaderFeatureFlags^m.WriterFeatureFlags)&pairedFlags != 0 {
		return fmt.Errorf("%w: the manifest sets only one of the reader and writer flags for mixed data file versions", errCorrupt)
	}
	return nil
}

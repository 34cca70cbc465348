package lancefmt

import (
	"fmt"
	"math/bits"
	"strings"
)

// Feature flags of the table format (Manifest.reader_feature_flags and
// writer_feature_flags), by bit, as Lance 14 (crates 14.0.2, pylance 14.0.3)
// defines them. featureTable says what each means and what this
// package does with it.
const (
	flagDeletionFiles       = 1 << 0
	flagStableRowIDs        = 1 << 1
	flagUseV2Format         = 1 << 2
	flagTableConfig         = 1 << 3
	flagBasePaths           = 1 << 4
	flagNoTxnFile           = 1 << 5
	flagOverlays            = 1 << 6
	flagCoveredIndex        = 1 << 7
	flagMixedFileVersions   = 1 << 8
	flagFragReuseRowIDs     = 1 << 9
	flagFragmentReuseIndex  = 1 << 10
	flagSpilledRowLineage   = 1 << 11
	flagFragmentTree        = 1 << 12
	flagIndependentCovering = 1 << 13
	flagManagedBlobs        = 1 << 14
	flagNonReusableFieldIDs = 1 << 15
	flagZoneWriteSeeds      = 1 << 16
	flagReserved17          = 1 << 17

	// pairedFlags must be set in both or in neither of the reader and
	// writer flags; Lance 14 calls a manifest that sets one of them corrupt.
	pairedFlags         = flagMixedFileVersions | flagManagedBlobs
	manifestFooterBytes = 16
)

// featureAction is what this package does with a reader feature flag.
type featureAction int

const (
	// featureAccept: nothing to do when reading; Rewrite sets the bit in
	// its output when the output needs it.
	featureAccept featureAction = iota
	// featureHandle: the reader and Rewrite implement the feature.
	featureHandle
	// featureRefuse: Open refuses a version whose reader flags set it.
	featureRefuse
)

// feature describes one bit of the manifest's feature flags.
type feature struct {
	flag    uint64
	name    string // Lance's constant for the flag, where its docs name it
	meaning string // in words, as the refusal names it
	// lanceReads: released Lance 14 builds open a table whose reader
	// flags set the bit (with its writer bit where the two are paired).
	lanceReads bool
	action     featureAction
	// advice, for a refused bit, says why and what the user can do.
	advice string
}

// featureTable lists bits 0-17. lanceReads was measured by setting each bit
// (and its writer twin where Lance pairs them) in a table pylance 14.0.3
// wrote and opening it with pylance 14.0.3 (TestFeatureTableAgainstLance).
// Bits pylance writes are converted from real tables in
// convert/lance (TestPylance14): 0 (types_*), 1 (kitchen, spilled_lineage),
// 3 and 11 (spilled_lineage), 4 (multibase, clone, ext_base), 8 (mixed), 14
// (managed*). Bits 2 and 5 say nothing a reader needs (2 is no longer
// written; 5 is about writers). The refused bits are ones released Lance 14
// builds refuse as well (6, 9, 12, 13, 15 as a reader bit, 16, 17), or
// index features whose row addresses or covering columns a page-copying
// rewrite would leave wrong (7, 10). pylance 14.0.3's Python API does not
// set 7 or 10 on its own (compact_files(defer_index_remap=True) writes a
// legacy fragment reuse index, which sets no bit; create_scalar_index takes
// no covering columns; TestFeatureBitsPylanceLeaves checks both against
// the pinned pylance), so TestFeatureTable checks every refusal on a
// manifest built with the bit, and TestFeatureTableAgainstLance what Lance
// does with each bit.
var featureTable = [...]feature{
	{flagDeletionFiles, "FLAG_DELETION_FILES", "deletion files", true, featureHandle, ""},
	{flagStableRowIDs, "FLAG_STABLE_ROW_IDS", "stable row ids", true, featureHandle, ""},
	{flagUseV2Format, "FLAG_USE_V2_FORMAT_DEPRECATED", "the deprecated v2 format marker", true, featureAccept, ""},
	{flagTableConfig, "FLAG_TABLE_CONFIG", "table configuration", true, featureAccept, ""},
	{flagBasePaths, "FLAG_BASE_PATHS", "several base paths (shallow clones, multi-base tables)", true, featureHandle, ""},
	{flagNoTxnFile, "FLAG_DISABLE_TRANSACTION_FILE", "transactions kept only in the manifest", true, featureAccept, ""},
	{flagOverlays, "FLAG_UNSTABLE_DATA_OVERLAY_FILES", "data overlay files", false, featureRefuse,
		"an unstable Lance feature that released Lance 14 builds refuse as well; compact the overlays away with optimize.compact_files in the Lance build that wrote them and convert the result"},
	{flagCoveredIndex, "FLAG_COVERED_INDEX_METADATA", "indices with covering columns", true, featureRefuse,
		"Lance 14 reads it, but bpconvert does not carry an index that holds copies of other columns' values; drop those indices with drop_index, convert, and build them again on the output"},
	{flagMixedFileVersions, "FLAG_MIXED_DATA_FILE_VERSIONS", "data files of several file versions", true, featureHandle, ""},
	{flagFragReuseRowIDs, "FLAG_FRAG_REUSE_WITH_STABLE_ROW_IDS", "a fragment reuse index over stable row ids", false, featureRefuse,
		"released Lance 14 builds refuse it as well"},
	{flagFragmentReuseIndex, "FLAG_FRAGMENT_REUSE_INDEX", "a tagged fragment reuse index, left by compaction that defers index remapping", true, featureRefuse,
		"Lance 14 reads it, but bpconvert does not translate row addresses through fragment reuse histories, and the bit stays set on every later version; write the rows into a new table with lance.write_dataset and convert that"},
	{flagSpilledRowLineage, "", "row lineage spilled to data file columns", true, featureHandle, ""},
	{flagFragmentTree, "FLAG_FRAGMENT_TREE", "a fragment metadata tree", false, featureRefuse,
		"released Lance 14 builds refuse it as well"},
	{flagIndependentCovering, "FLAG_INDEPENDENT_COVERING_FIELDS", "indices declaring covering fields apart from key fields", false, featureRefuse,
		"released Lance 14 builds refuse it as well"},
	{flagManagedBlobs, "FLAG_MANAGED_BLOBS", "managed blobs", true, featureHandle, ""},
	{flagNonReusableFieldIDs, "", "non-reusable field ids as a reader feature", false, featureRefuse,
		"Lance 14 defines this bit for writers only and refuses a manifest whose reader flags set it as corrupt; the table was not written by a released Lance"},
	{flagZoneWriteSeeds, "", "zone write seeds", false, featureRefuse,
		"released Lance 14 builds refuse it as well"},
	{flagReserved17, "", "reader feature bit 17, newer than Lance 14", false, featureRefuse,
		"Lance 14 does not know it either; a newer bpconvert may read it"},
}

// featureOf returns the entry of featureTable for one flag bit, nil for a
// bit past the table.
func featureOf(flag uint64) *feature {
	i := bits.TrailingZeros64(flag)
	if i < len(featureTable) && featureTable[i].flag == flag {
		return &featureTable[i]
	}
	return nil
}

// refusedReaderFlags is the set of reader flags Open refuses: the refused
// entries of featureTable and every bit past it.
var refusedReaderFlags = func() uint64 {
	known := uint64(0)
	refused := uint64(0)
	for _, f := range featureTable {
		known |= f.flag
		if f.action == featureRefuse {
			refused |= f.flag
		}
	}
	return refused | ^known
}()

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

// describeFeatures names, in words, each flag set in flags, with what
// Lance 14 does with it and what the user can do.
func describeFeatures(flags uint64) []string {
	var out []string
	var unnamed []string
	for f := flags; f != 0; f &= f - 1 {
		bit := uint64(1) << bits.TrailingZeros64(f)
		if ft := featureOf(bit); ft != nil {
			out = append(out, ft.meaning+" ("+ft.advice+")")
			continue
		}
		unnamed = append(unnamed, fmt.Sprint(bits.TrailingZeros64(f)))
	}
	if len(unnamed) > 0 {
		out = append(out, fmt.Sprintf("table features newer than Lance 14 (reader feature bit %s, unknown to Lance 14 and to this reader; a newer bpconvert may read them)", strings.Join(unnamed, ", ")))
	}
	return out
}

// unsupportedFlags returns the reader feature flags of m this package does
// not support.
func (m *Manifest) unsupportedFlags() uint64 {
	return m.ReaderFeatureFlags & refusedReaderFlags
}

// checkPaired refuses a manifest whose paired reader and writer flags
// disagree (Lance treats that as a corrupt manifest).
func (m *Manifest) checkPaired() error {
	diff := (m.ReaderFeatureFlags ^ m.WriterFeatureFlags) & pairedFlags
	if diff == 0 {
		return nil
	}
	var names []string
	for f := diff; f != 0; f &= f - 1 {
		names = append(names, featureOf(uint64(1)<<bits.TrailingZeros64(f)).meaning)
	}
	return fmt.Errorf("%w: the manifest sets only one of the reader and writer flags for %s", errCorrupt, strings.Join(names, " and "))
}

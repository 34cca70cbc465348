package lancefmt

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// Field is one entry of a dataset schema as stored in the manifest: the
// schema is a flattened pre-order list in which children name their parent.
type Field struct {
	ID            int32             // field id, unique in the dataset
	ParentID      int32             // id of the parent field, -1 at the top level
	Name          string            // field name
	LogicalType   string            // Lance logical type, for example "int64" or "list"
	Nullable      bool              // whether the field may hold nulls
	ExtensionName string            // Arrow extension name, for example "lance.blob.v2"
	Metadata      map[string][]byte // Arrow field metadata
	Children      []*Field          // child fields, in schema order
}

// DataFile is one data file of a fragment.
type DataFile struct {
	Path          string  // relative to the dataset's data directory
	Fields        []int32 // field ids stored in the file (-2 marks a dropped field)
	ColumnIndices []int32 // column index in the file for each entry of Fields
	Major, Minor  uint32  // file format version
	SizeBytes     uint64  // file size, 0 when unknown
	BaseID        *uint32 // base path id, nil for the dataset root
}

// DeletionFile names the rows deleted from a fragment.
type DeletionFile struct {
	Bitmap      bool    // true: roaring bitmap (.bin); false: Arrow IPC (.arrow)
	ReadVersion uint64  // dataset version the file was written against
	ID          uint64  // random id in the file name
	NumDeleted  uint64  // number of deleted rows
	BaseID      *uint32 // base path id, nil for the dataset root
}

// Fragment is a horizontal slice of a dataset.
type Fragment struct {
	ID           uint64        // fragment id; row address = ID<<32 | row offset
	Files        []DataFile    // data files, each holding some of the fields
	Deletion     *DeletionFile // nil when no row is deleted
	PhysicalRows uint64        // rows in the data files, deleted ones included
}

// BasePath is an alternative root for data and deletion files.
type BasePath struct {
	ID            uint32 // id that data files, deletion files and blobs refer to
	Name          string // optional name
	IsDatasetRoot bool   // files live under Path/data (or Path/_deletions)
	Path          string // the base directory
}

// Manifest is the decoded description of one dataset version.
type Manifest struct {
	Fields             []*Field          // flattened schema in pre-order
	Fragments          []Fragment        // the fragments, in scan order
	Version            uint64            // dataset version
	SchemaMetadata     map[string][]byte // schema metadata
	ReaderFeatureFlags uint64            // features a reader must understand
	WriterFeatureFlags uint64            // features a writer must understand
	WriterLibrary      string            // library that wrote the version, e.g. "lance"
	WriterVersion      string            // its version
	DataFormat         string            // "lance"
	DataVersion        string            // data storage version, for example "2.1" ("0.1" = legacy)
	BasePaths          []BasePath        // alternative roots for files
	Config             map[string]string // table configuration
}

// parseManifestFile decodes a whole manifest file (framing and message).
func parseManifestFile(b []byte) (*Manifest, error) {
	if len(b) < manifestFooterBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes is too short", errCorrupt, len(b))
	}
	tail := b[len(b)-manifestFooterBytes:]
	if string(tail[12:]) != "LANC" {
		return nil, fmt.Errorf("%w: manifest lacks the LANC magic", errCorrupt)
	}
	pos := binary.LittleEndian.Uint64(tail[:8])
	body := uint64(len(b) - manifestFooterBytes)
	if pos > body || body-pos < 4 {
		return nil, fmt.Errorf("%w: manifest position %d outside the file", errCorrupt, pos)
	}
	n := uint64(binary.LittleEndian.Uint32(b[pos:]))
	if n > body-pos-4 {
		return nil, fmt.Errorf("%w: manifest length %d exceeds the file", errCorrupt, n)
	}
	return parseManifest(b[pos+4 : pos+4+n])
}

// Field numbers of the table format's messages (lance.table and
// lance.file.Field) that this package reads.
const (
	manifestFields         = 1 // Manifest
	manifestFragments      = 2
	manifestVersion        = 3
	manifestSchemaMetadata = 5
	manifestReaderFlags    = 9
	manifestWriterFlags    = 10
	manifestWriterVersion  = 13
	manifestDataFormat     = 15
	manifestConfig         = 16
	manifestBasePaths      = 18
	manifestIndexSection   = 6  // position of the IndexSection
	manifestMaxFragmentID  = 11 // max_fragment_id
	manifestNextRowID      = 14
	manifestTableMetadata  = 19

	indexSectionIndices = 1 // IndexSection
	indexUUID           = 1 // IndexMetadata
	indexFields         = 2
	indexName           = 3
	indexDatasetVersion = 4
	uuidBytes           = 1 // UUID

	writerVersionLibrary = 1 // Manifest.WriterVersion
	writerVersionVersion = 2

	dataFormatFileFormat = 1 // Manifest.DataStorageFormat
	dataFormatVersion    = 2

	basePathID            = 1 // BasePath
	basePathName          = 2
	basePathIsDatasetRoot = 3
	basePathPath          = 4

	mapEntryKey   = 1 // map<string, ...> entries
	mapEntryValue = 2

	fieldName          = 2 // lance.file.Field
	fieldID            = 3
	fieldParentID      = 4
	fieldLogicalType   = 5
	fieldNullable      = 6
	fieldExtensionName = 9
	fieldMetadata      = 10

	fragmentID           = 1 // DataFragment
	fragmentFiles        = 2
	fragmentDeletionFile = 3
	fragmentPhysicalRows = 4

	deletionFileType       = 1 // DeletionFile
	deletionReadVersion    = 2
	deletionID             = 3
	deletionNumDeletedRows = 4
	deletionBaseID         = 7

	dataFilePath          = 1 // DataFile
	dataFileFields        = 2
	dataFileColumnIndices = 3
	dataFileMajorVersion  = 4
	dataFileMinorVersion  = 5
	dataFileSizeBytes     = 6
	dataFileBaseID        = 7
)

// parseManifest decodes a lance.table.Manifest message.
func parseManifest(b []byte) (*Manifest, error) {
	m := &Manifest{SchemaMetadata: map[string][]byte{}, Config: map[string]string{}}
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case manifestFields:
			fl, err := parseField(f.B)
			if err != nil {
				return err
			}
			m.Fields = append(m.Fields, fl)
		case manifestFragments:
			fr, err := parseFragment(f.B)
			if err != nil {
				return err
			}
			m.Fragments = append(m.Fragments, fr)
		case manifestVersion:
			m.Version = f.U
		case manifestSchemaMetadata:
			k, v, err := parseMapEntry(f.B)
			if err != nil {
				return err
			}
			m.SchemaMetadata[k] = v
		case manifestReaderFlags:
			m.ReaderFeatureFlags = f.U
		case manifestWriterFlags:
			m.WriterFeatureFlags = f.U
		case manifestWriterVersion:
			return wire.Walk(f.B, func(g wire.Field) error {
				switch g.Num {
				case writerVersionLibrary:
					m.WriterLibrary = string(g.B)
				case writerVersionVersion:
					m.WriterVersion = string(g.B)
				}
				return nil
			})
		case manifestDataFormat:
			return wire.Walk(f.B, func(g wire.Field) error {
				switch g.Num {
				case dataFormatFileFormat:
					m.DataFormat = string(g.B)
				case dataFormatVersion:
					m.DataVersion = string(g.B)
				}
				return nil
			})
		case manifestConfig:
			k, v, err := parseMapEntry(f.B)
			if err != nil {
				return err
			}
			m.Config[k] = string(v)
		case manifestBasePaths:
			var bp BasePath
			err := wire.Walk(f.B, func(g wire.Field) error {
				switch g.Num {
				case basePathID:
					bp.ID = uint32(g.U)
				case basePathName:
					bp.Name = string(g.B)
				case basePathIsDatasetRoot:
					bp.IsDatasetRoot = g.U != 0
				case basePathPath:
					bp.Path = string(g.B)
				}
				return nil
			})
			if err != nil {
				return err
			}
			m.BasePaths = append(m.BasePaths, bp)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := linkFields(m.Fields); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return m, nil
}

// parseMapEntry decodes a map<string, bytes|string> entry.
func parseMapEntry(b []byte) (string, []byte, error) {
	var k string
	var v []byte
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case mapEntryKey:
			k = string(f.B)
		case mapEntryValue:
			v = append([]byte(nil), f.B...)
		}
		return nil
	})
	return k, v, err
}

// parseField decodes a lance.file.Field message.
func parseField(b []byte) (*Field, error) {
	fl := &Field{ParentID: -1, Metadata: map[string][]byte{}}
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case fieldName:
			fl.Name = string(f.B)
		case fieldID:
			fl.ID = wire.Int32(f.U)
		case fieldParentID:
			fl.ParentID = wire.Int32(f.U)
		case fieldLogicalType:
			fl.LogicalType = string(f.B)
		case fieldNullable:
			fl.Nullable = f.U != 0
		case fieldExtensionName:
			fl.ExtensionName = string(f.B)
		case fieldMetadata:
			k, v, err := parseMapEntry(f.B)
			if err != nil {
				return err
			}
			fl.Metadata[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("field: %w", err)
	}
	return fl, nil
}

// linkFields fills Children from the parent ids.
func linkFields(fields []*Field) error {
	byID := make(map[int32]*Field, len(fields))
	for _, f := range fields {
		if _, dup := byID[f.ID]; dup {
			return fmt.Errorf("%w: duplicate field id %d", errCorrupt, f.ID)
		}
		byID[f.ID] = f
	}
	for _, f := range fields {
		f.Children = nil
	}
	for _, f := range fields {
		if f.ParentID < 0 {
			continue
		}
		p, ok := byID[f.ParentID]
		if !ok || p == f {
			return fmt.Errorf("%w: field %d names unknown parent %d", errCorrupt, f.ID, f.ParentID)
		}
		p.Children = append(p.Children, f)
	}
	// Reject cycles: every field must reach the top level.
	for _, f := range fields {
		cur, steps := f, 0
		for cur.ParentID >= 0 {
			cur = byID[cur.ParentID]
			if steps++; steps > len(fields) {
				return fmt.Errorf("%w: field %d is part of a parent cycle", errCorrupt, f.ID)
			}
		}
	}
	return nil
}

// parseFragment decodes a lance.table.DataFragment message.
func parseFragment(b []byte) (Fragment, error) {
	var fr Fragment
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case fragmentID:
			fr.ID = f.U
		case fragmentFiles:
			df, err := parseDataFile(f.B)
			if err != nil {
				return err
			}
			fr.Files = append(fr.Files, df)
		case fragmentDeletionFile:
			d := &DeletionFile{}
			err := wire.Walk(f.B, func(g wire.Field) error {
				switch g.Num {
				case deletionFileType:
					d.Bitmap = g.U == 1
					if g.U > 1 {
						return fmt.Errorf("%w: unknown deletion file type %d", errCorrupt, g.U)
					}
				case deletionReadVersion:
					d.ReadVersion = g.U
				case deletionID:
					d.ID = g.U
				case deletionNumDeletedRows:
					d.NumDeleted = g.U
				case deletionBaseID:
					v := uint32(g.U)
					d.BaseID = &v
				}
				return nil
			})
			if err != nil {
				return err
			}
			fr.Deletion = d
		case fragmentPhysicalRows:
			fr.PhysicalRows = f.U
		}
		return nil
	})
	if err != nil {
		return fr, fmt.Errorf("fragment: %w", err)
	}
	return fr, nil
}

// parseDataFile decodes a lance.table.DataFile message.
func parseDataFile(b []byte) (DataFile, error) {
	var df DataFile
	var fields, cols []uint64
	err := wire.Walk(b, func(f wire.Field) error {
		var err error
		switch f.Num {
		case dataFilePath:
			df.Path = string(f.B)
		case dataFileFields:
			fields, err = wire.PackedUints(fields, f)
		case dataFileColumnIndices:
			cols, err = wire.PackedUints(cols, f)
		case dataFileMajorVersion:
			df.Major = uint32(f.U)
		case dataFileMinorVersion:
			df.Minor = uint32(f.U)
		case dataFileSizeBytes:
			df.SizeBytes = f.U
		case dataFileBaseID:
			v := uint32(f.U)
			df.BaseID = &v
		}
		return err
	})
	if err != nil {
		return df, fmt.Errorf("data file: %w", err)
	}
	if len(cols) != 0 && len(cols) != len(fields) {
		return df, fmt.Errorf("%w: data file %q has %d fields but %d column indices", errCorrupt, df.Path, len(fields), len(cols))
	}
	for i, v := range fields {
		df.Fields = append(df.Fields, wire.Int32(v))
		if len(cols) > 0 {
			df.ColumnIndices = append(df.ColumnIndices, wire.Int32(cols[i]))
		} else {
			df.ColumnIndices = append(df.ColumnIndices, int32(i))
		}
	}
	return df, nil
}

// manifestVersionFromName returns the version a manifest file name stands
// for, and false when the name is not a committed manifest.
func manifestVersionFromName(name string) (uint64, bool) {
	const suffix = ".manifest"
	if len(name) <= len(suffix) || name[len(name)-len(suffix):] != suffix || name[0] == 'd' {
		return 0, false
	}
	stem := name[:len(name)-len(suffix)]
	var v uint64
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if len(stem) == 20 { // V2 naming: u64::MAX - version, zero padded
		return ^uint64(0) - v, true
	}
	return v, true
}

// sortVersions sorts and deduplicates versions.
func sortVersions(vs []uint64) []uint64 {
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	out := vs[:0]
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			out = append(out, v)
		}
	}
	return out
}

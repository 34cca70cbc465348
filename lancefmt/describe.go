package lancefmt

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// DescribeOptions chooses what Describe reports.
type DescribeOptions struct {
	// Columns restricts the fields, stored columns and rows to these
	// top-level columns (every column when empty).
	Columns []string
	// Rows is how many leading rows to render (none when 0).
	Rows int
}

// Description is what an inspector shows of one version of a dataset: its
// versions, schema, fragments, how every stored column is encoded, and
// optionally its first rows. Its JSON form is the one lance-inspect prints.
type Description struct {
	Version        uint64            `json:"version"`
	LatestVersion  uint64            `json:"latest_version"`
	Versions       []uint64          `json:"versions"`
	StorageVersion string            `json:"data_storage_version"` // "0.1 (legacy)" for the legacy format
	Writer         string            `json:"writer,omitempty"`     // writer library and version
	NumRows        uint64            `json:"num_rows"`
	PhysicalRows   uint64            `json:"physical_rows"`
	DeletedRows    uint64            `json:"deleted_rows"`
	Fragments      []FragmentInfo    `json:"fragments"`
	SchemaMetadata map[string]string `json:"schema_metadata,omitempty"`
	Fields         []FieldInfo       `json:"fields"`
	Columns        []ColumnInfo      `json:"columns"`
	// RowColumns are the columns of Rows: the chosen ones, or every
	// top-level column whose type is supported.
	RowColumns []string     `json:"row_columns,omitempty"`
	Rows       []JSONObject `json:"rows,omitempty"`
}

// FragmentInfo describes one fragment of the described version.
type FragmentInfo struct {
	ID           uint64         `json:"id"`
	PhysicalRows uint64         `json:"physical_rows"`
	DeletedRows  uint64         `json:"deleted_rows"`
	DeletionFile string         `json:"deletion_file,omitempty"` // "arrow" or "bitmap"
	Files        []DataFileInfo `json:"files"`
}

// DataFileInfo describes one data file of a fragment.
type DataFileInfo struct {
	Path        string  `json:"path"`
	FileVersion string  `json:"file_version"` // as FileVersionName names it
	FieldIDs    []int32 `json:"field_ids"`
	SizeBytes   uint64  `json:"size_bytes,omitempty"`
}

// FieldInfo describes one field of the schema, children nested.
type FieldInfo struct {
	ID          int32             `json:"id"`
	ParentID    int32             `json:"parent_id"`
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	LogicalType string            `json:"logical_type"`
	Nullable    bool              `json:"nullable"`
	Extension   string            `json:"extension,omitempty"`
	Blob        int               `json:"blob,omitempty"` // blob version (1 or 2), 0 otherwise
	Metadata    map[string]string `json:"metadata,omitempty"`
	Unsupported string            `json:"unsupported,omitempty"` // why this package cannot read it
	Children    []FieldInfo       `json:"children,omitempty"`
}

// ColumnInfo describes one stored column (a field path), summed over
// fragments.
type ColumnInfo struct {
	Path         string   `json:"path"`
	FieldID      int32    `json:"field_id"`
	FileVersions []string `json:"file_versions"`
	Encoding     string   `json:"column_encoding"`
	Pages        int      `json:"pages"`
	Bytes        uint64   `json:"bytes"`
	// LargestPage is the size of the column's largest page in bytes.
	LargestPage uint64         `json:"largest_page_bytes"`
	Encodings   []EncodingInfo `json:"page_encodings"`
}

// EncodingInfo is one page encoding of a column and how many pages use it.
type EncodingInfo struct {
	Encoding string `json:"encoding"`
	Pages    int    `json:"pages"`
}

// UnknownColumnError is returned by Describe for a column the schema does
// not have.
type UnknownColumnError struct {
	Dir     string
	Column  string
	Columns []string // the top-level columns the schema has
}

func (e *UnknownColumnError) Error() string {
	return fmt.Sprintf("lance: %s: no column %q", e.Dir, e.Column)
}

// Describe gathers the description of the opened version of ds. It reads
// the metadata of every data file (and the first rows when opts.Rows > 0);
// errors name the dataset, fragment and file.
func Describe(ctx context.Context, ds *Dataset, opts DescribeOptions) (*Description, error) {
	sc := ds.Schema()
	for _, c := range opts.Columns {
		if sc.Field(c) == nil {
			names := make([]string, len(sc.Fields))
			for i, f := range sc.Fields {
				names[i] = f.Name
			}
			return nil, &UnknownColumnError{Dir: ds.Dir(), Column: c, Columns: names}
		}
	}
	m := ds.Manifest()
	versions := ds.Versions()
	d := &Description{
		Version: ds.Version(), LatestVersion: versions[len(versions)-1], Versions: versions,
		StorageVersion: m.DataVersion, NumRows: ds.NumRows(), SchemaMetadata: textMap(sc.Metadata),
	}
	if m.WriterLibrary != "" {
		d.Writer = strings.TrimSpace(m.WriterLibrary + " " + m.WriterVersion)
	}
	if d.StorageVersion == "0.1" {
		d.StorageVersion = "0.1 (legacy)"
	}
	tops := chosenFields(sc, opts.Columns)
	for _, f := range tops {
		fi := describeField(f)
		if reason, ok := sc.Unsupported[f.Name]; ok {
			fi.Unsupported = reason.Error()
		}
		d.Fields = append(d.Fields, fi)
	}
	if err := d.addFragments(ctx, ds, opts.Columns); err != nil {
		return nil, err
	}
	if opts.Rows > 0 {
		for _, f := range tops {
			if _, bad := sc.Unsupported[f.Name]; !bad || len(opts.Columns) > 0 {
				d.RowColumns = append(d.RowColumns, f.Name)
			}
		}
		rows, err := ds.Head(ctx, d.RowColumns, opts.Rows)
		if err != nil {
			return nil, err
		}
		d.Rows = rows
	}
	return d, nil
}

// chosenFields returns the top-level fields named by columns, in schema
// order (every field when columns is empty).
func chosenFields(sc *Schema, columns []string) []*Field {
	var tops []*Field
	for _, f := range sc.Fields {
		if len(columns) == 0 || containsString(columns, f.Name) {
			tops = append(tops, f)
		}
	}
	return tops
}

// addFragments describes every fragment and sums the encodings of its
// stored columns into d.Columns, in schema order.
func (d *Description) addFragments(ctx context.Context, ds *Dataset, columns []string) error {
	byPath := map[string]*ColumnInfo{}
	var order []string
	for _, fr := range ds.Fragments() {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi := describeFragment(&fr)
		d.Fragments = append(d.Fragments, fi)
		d.PhysicalRows += fr.PhysicalRows
		d.DeletedRows += fi.DeletedRows
		ces, err := ds.ColumnEncodings(&fr, columns) // nil: every column
		if err != nil {
			return err
		}
		for _, ce := range ces {
			c := byPath[ce.Path]
			if c == nil {
				c = &ColumnInfo{Path: ce.Path, FieldID: ce.FieldID, Encoding: ce.Encoding}
				byPath[ce.Path] = c
				order = append(order, ce.Path)
			}
			c.add(ce)
		}
	}
	// Columns in schema order (field ids are pre-order), then by path.
	sort.SliceStable(order, func(i, j int) bool { return byPath[order[i]].FieldID < byPath[order[j]].FieldID })
	for _, p := range order {
		d.Columns = append(d.Columns, *byPath[p])
	}
	return nil
}

// describeFragment describes a fragment and its data files.
func describeFragment(fr *Fragment) FragmentInfo {
	fi := FragmentInfo{ID: fr.ID, PhysicalRows: fr.PhysicalRows}
	if fr.Deletion != nil {
		fi.DeletedRows = fr.Deletion.NumDeleted
		fi.DeletionFile = "arrow"
		if fr.Deletion.Bitmap {
			fi.DeletionFile = "bitmap"
		}
	}
	for _, df := range fr.Files {
		fi.Files = append(fi.Files, DataFileInfo{Path: df.Path, FileVersion: FileVersionName(df.Major, df.Minor), FieldIDs: df.Fields, SizeBytes: df.SizeBytes})
	}
	return fi
}

// add sums one fragment's column into c.
func (c *ColumnInfo) add(ce ColumnEncoding) {
	if v := FileVersionName(ce.Major, ce.Minor); !containsString(c.FileVersions, v) {
		c.FileVersions = append(c.FileVersions, v)
	}
	if ce.Encoding != c.Encoding && !strings.Contains(c.Encoding, ce.Encoding) {
		c.Encoding += ", " + ce.Encoding
	}
	for _, p := range ce.Pages {
		c.Pages++
		c.Bytes += p.Bytes
		c.LargestPage = max(c.LargestPage, p.Bytes)
		c.countEncoding(p.Encoding)
	}
}

// countEncoding counts one page of encoding enc.
func (c *ColumnInfo) countEncoding(enc string) {
	for i := range c.Encodings {
		if c.Encodings[i].Encoding == enc {
			c.Encodings[i].Pages++
			return
		}
	}
	c.Encodings = append(c.Encodings, EncodingInfo{Encoding: enc, Pages: 1})
}

// describeField describes a field and its children.
func describeField(f *Field) FieldInfo {
	fi := FieldInfo{ID: f.ID, ParentID: f.ParentID, Name: f.Name, Type: f.ArrowTypeName(), LogicalType: f.LogicalType,
		Nullable: f.Nullable, Extension: f.ExtensionName, Blob: f.BlobVersion(), Metadata: textMap(f.Metadata)}
	for _, c := range f.Children {
		fi.Children = append(fi.Children, describeField(c))
	}
	return fi
}

// textMap renders metadata values as text: UTF-8 values as they are,
// others as "base64:" and their base64.
func textMap(m map[string][]byte) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if utf8.Valid(v) {
			out[k] = string(v)
		} else {
			out[k] = "base64:" + base64.StdEncoding.EncodeToString(v)
		}
	}
	return out
}

// FileVersionName names a data file format version as Lance's storage
// versions do: 0.1/0.2 are the legacy format, 0.3 is 2.0.
func FileVersionName(major, minor uint32) string {
	switch {
	case major == 0 && minor < 3:
		return fmt.Sprintf("0.%d (legacy)", minor)
	case major == 0 && minor == 3:
		return "2.0"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bpconvert/bpconvert/lance"
	"github.com/bpconvert/bpconvert/plan"
)

// lance-inspect describes one version of a Lance dataset: its versions,
// schema, fragments, how every stored column is encoded, and optionally its
// first rows. It only reads.
//
// Rows print as JSON objects, values rendered by lance.Head: binary
// values as {"size", "sha256"}, blob columns as handles {"size", "kind",
// "ref_id", "location"} (see the lance package).

// lanceInspectOptions are the flags of lance-inspect.
type lanceInspectOptions struct {
	version    uint64
	versionSet bool
	columns    []string
	rows       int
}

// lanceInspection is the result of lance-inspect, printed as text or as one
// JSON document.
type lanceInspection struct {
	Command        string             `json:"command"`
	OK             bool               `json:"ok"`
	Status         string             `json:"status"`
	ExitCode       int                `json:"exit_code"`
	Dataset        string             `json:"dataset"`
	Version        uint64             `json:"version"`
	LatestVersion  uint64             `json:"latest_version"`
	Versions       []uint64           `json:"versions"`
	StorageVersion string             `json:"data_storage_version"`
	Writer         string             `json:"writer,omitempty"`
	NumRows        uint64             `json:"num_rows"`
	PhysicalRows   uint64             `json:"physical_rows"`
	DeletedRows    uint64             `json:"deleted_rows"`
	Fragments      []lanceFragment    `json:"fragments"`
	SchemaMetadata map[string]string  `json:"schema_metadata,omitempty"`
	Fields         []lanceField       `json:"fields"`
	Columns        []lanceColumn      `json:"columns"`
	RowColumns     []string           `json:"row_columns,omitempty"`
	Rows           []lance.JSONObject `json:"rows,omitempty"`
}

// lanceFragment is one fragment of the inspected version.
type lanceFragment struct {
	ID           uint64          `json:"id"`
	PhysicalRows uint64          `json:"physical_rows"`
	DeletedRows  uint64          `json:"deleted_rows"`
	DeletionFile string          `json:"deletion_file,omitempty"` // "arrow" or "bitmap"
	Files        []lanceDataFile `json:"files"`
}

// lanceDataFile is one data file of a fragment.
type lanceDataFile struct {
	Path        string  `json:"path"`
	FileVersion string  `json:"file_version"`
	FieldIDs    []int32 `json:"field_ids"`
	SizeBytes   uint64  `json:"size_bytes,omitempty"`
}

// lanceField is one field of the schema, children nested.
type lanceField struct {
	ID          int32             `json:"id"`
	ParentID    int32             `json:"parent_id"`
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	LogicalType string            `json:"logical_type"`
	Nullable    bool              `json:"nullable"`
	Extension   string            `json:"extension,omitempty"`
	Blob        int               `json:"blob,omitempty"` // blob version (1 or 2), 0 otherwise
	Metadata    map[string]string `json:"metadata,omitempty"`
	Unsupported string            `json:"unsupported,omitempty"`
	Children    []lanceField      `json:"children,omitempty"`
}

// lanceColumn is one stored column (a field path), summed over fragments.
type lanceColumn struct {
	Path         string          `json:"path"`
	FieldID      int32           `json:"field_id"`
	FileVersions []string        `json:"file_versions"`
	Encoding     string          `json:"column_encoding"`
	Pages        int             `json:"pages"`
	Bytes        uint64          `json:"bytes"`
	Encodings    []lanceEncoding `json:"page_encodings"`
}

// lanceEncoding is one page encoding of a column and how many pages use it.
type lanceEncoding struct {
	Encoding string `json:"encoding"`
	Pages    int    `json:"pages"`
}

func cmdLanceInspect(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("lance-inspect", flag.ContinueOnError)
	var o lanceInspectOptions
	var cols string
	fset.Uint64Var(&o.version, "version", 0, "inspect dataset version `N` (default: the latest)")
	fset.StringVar(&cols, "columns", "", "comma-separated top-level `columns` to describe and print (default: all)")
	fset.IntVar(&o.rows, "rows", 0, "also print the first `N` rows (JSON lines; under \"rows\" with --json)")
	e.commonFlags(fset)
	const argNames = "DATASET"
	pos, err := parseFlags(fset, args, 1, argNames)
	if err != nil {
		if err == flag.ErrHelp {
			flagHelp(e, fset, argNames)
			fmt.Fprintln(e.stdout, "\nBinary values print as {size, sha256}; blob columns as handles {size, kind, ref_id, location}.")
			fmt.Fprintln(e.stdout, "Exit 3 when DATASET is not a readable Lance dataset; exit 2 for an unknown --version or column.")
		}
		return nil, err
	}
	fset.Visit(func(f *flag.Flag) { o.versionSet = o.versionSet || f.Name == "version" })
	if o.versionSet && o.version == 0 {
		return nil, &usageError{msg: "lance-inspect: --version 0: Lance versions start at 1", hint: "omit --version for the latest"}
	}
	if o.rows < 0 {
		return nil, usagef("lance-inspect: --rows %d: want a number of rows >= 0", o.rows)
	}
	for _, c := range strings.Split(cols, ",") {
		if c = strings.TrimSpace(c); c != "" && !contains(o.columns, c) {
			o.columns = append(o.columns, c)
		}
	}
	ins, err := inspectLance(ctx, pos[0], o)
	if err != nil {
		return nil, err
	}
	for _, f := range ins.Fields {
		if o.rows > 0 && f.Unsupported != "" && !contains(ins.RowColumns, f.Name) {
			e.infof("lance-inspect: rows leave out column %q: %s", f.Name, f.Unsupported)
		}
	}
	if !e.json {
		if err := renderLance(e.stdout, ins); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(ins)
	if err != nil {
		return nil, err
	}
	return jsonDoc(b), nil
}

// inspectLance opens the dataset and gathers the inspection.
func inspectLance(ctx context.Context, dir string, o lanceInspectOptions) (*lanceInspection, error) {
	ds, err := lance.Open(ctx, dir, lance.OpenOptions{Version: o.version})
	if errors.Is(err, lance.ErrVersionNotFound) {
		hint := ""
		if latest, lerr := lance.Open(ctx, dir, lance.OpenOptions{}); lerr == nil {
			hint = "the dataset has versions " + versionRanges(latest.Versions())
		}
		return nil, &usageError{msg: fmt.Sprintf("lance-inspect: %s: --version %d: no such version", dir, o.version), hint: hint}
	}
	if err != nil {
		hint := "DATASET must be a Lance dataset directory (holding _versions/ and data/), for LanceDB tables DB/NAME.lance"
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() && errors.Is(err, fs.ErrNotExist) {
			if _, verr := os.Stat(filepath.Join(dir, "_versions")); verr != nil {
				return nil, &inputError{err: fmt.Errorf("lance-inspect: %s is not a Lance dataset: it has no _versions directory", dir), hint: hint}
			}
		}
		return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err), hint: hint}
	}
	sc := ds.Schema()
	for _, c := range o.columns {
		if sc.Field(c) == nil {
			names := make([]string, len(sc.Fields))
			for i, f := range sc.Fields {
				names[i] = f.Name
			}
			return nil, &usageError{msg: fmt.Sprintf("lance-inspect: %s: no column %q", dir, c), hint: "columns: " + strings.Join(names, ", ")}
		}
	}
	m := ds.Manifest()
	versions := ds.Versions()
	ins := &lanceInspection{
		Command: "lance-inspect", OK: true, Status: "ok",
		Dataset: dir, Version: ds.Version(), LatestVersion: versions[len(versions)-1], Versions: versions,
		StorageVersion: m.DataVersion, NumRows: ds.NumRows(), SchemaMetadata: textMap(sc.Metadata),
	}
	if m.WriterLibrary != "" {
		ins.Writer = strings.TrimSpace(m.WriterLibrary + " " + m.WriterVersion)
	}
	if ins.StorageVersion == "0.1" {
		ins.StorageVersion = "0.1 (legacy)"
	}
	// Fields, restricted to the chosen columns.
	var tops []*lance.Field
	for _, f := range sc.Fields {
		if len(o.columns) == 0 || contains(o.columns, f.Name) {
			tops = append(tops, f)
		}
	}
	for _, f := range tops {
		lf := describeField(f)
		if reason, ok := sc.Unsupported[f.Name]; ok {
			lf.Unsupported = reason.Error()
		}
		ins.Fields = append(ins.Fields, lf)
	}
	// Fragments and the encodings of their columns.
	byPath := map[string]*lanceColumn{}
	var order []string
	for _, fr := range ds.Fragments() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lf := lanceFragment{ID: fr.ID, PhysicalRows: fr.PhysicalRows}
		if fr.Deletion != nil {
			lf.DeletedRows = fr.Deletion.NumDeleted
			lf.DeletionFile = "arrow"
			if fr.Deletion.Bitmap {
				lf.DeletionFile = "bitmap"
			}
		}
		for _, df := range fr.Files {
			lf.Files = append(lf.Files, lanceDataFile{Path: df.Path, FileVersion: fileVersion(df.Major, df.Minor), FieldIDs: df.Fields, SizeBytes: df.SizeBytes})
		}
		ins.Fragments = append(ins.Fragments, lf)
		ins.PhysicalRows += fr.PhysicalRows
		ins.DeletedRows += lf.DeletedRows
		ces, err := ds.ColumnEncodings(&fr, o.columns) // nil: every column
		if err != nil {
			return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err)}
		}
		for _, ce := range ces {
			c := byPath[ce.Path]
			if c == nil {
				c = &lanceColumn{Path: ce.Path, FieldID: ce.FieldID, Encoding: ce.Encoding}
				byPath[ce.Path] = c
				order = append(order, ce.Path)
			}
			if v := fileVersion(ce.Major, ce.Minor); !contains(c.FileVersions, v) {
				c.FileVersions = append(c.FileVersions, v)
			}
			if ce.Encoding != c.Encoding && !strings.Contains(c.Encoding, ce.Encoding) {
				c.Encoding += ", " + ce.Encoding
			}
			for _, p := range ce.Pages {
				c.Pages++
				c.Bytes += p.Bytes
				found := false
				for i := range c.Encodings {
					if c.Encodings[i].Encoding == p.Encoding {
						c.Encodings[i].Pages++
						found = true
						break
					}
				}
				if !found {
					c.Encodings = append(c.Encodings, lanceEncoding{Encoding: p.Encoding, Pages: 1})
				}
			}
		}
	}
	// Columns in schema order (field ids are pre-order), then by path.
	sort.SliceStable(order, func(i, j int) bool { return byPath[order[i]].FieldID < byPath[order[j]].FieldID })
	for _, p := range order {
		ins.Columns = append(ins.Columns, *byPath[p])
	}
	if o.rows > 0 {
		for _, f := range tops {
			if _, bad := sc.Unsupported[f.Name]; !bad || len(o.columns) > 0 {
				ins.RowColumns = append(ins.RowColumns, f.Name)
			}
		}
		rows, err := ds.Head(ctx, ins.RowColumns, o.rows)
		if err != nil {
			return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err)}
		}
		ins.Rows = rows
	}
	return ins, nil
}

// describeField describes a field and its children.
func describeField(f *lance.Field) lanceField {
	lf := lanceField{ID: f.ID, ParentID: f.ParentID, Name: f.Name, Type: f.ArrowTypeName(), LogicalType: f.LogicalType,
		Nullable: f.Nullable, Extension: f.ExtensionName, Blob: f.BlobVersion(), Metadata: textMap(f.Metadata)}
	for _, c := range f.Children {
		lf.Children = append(lf.Children, describeField(c))
	}
	return lf
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

// fileVersion names a data file format version as Lance's storage
// versions do: 0.1/0.2 are the legacy format, 0.3 is 2.0.
func fileVersion(major, minor uint32) string {
	switch {
	case major == 0 && minor < 3:
		return fmt.Sprintf("0.%d (legacy)", minor)
	case major == 0 && minor == 3:
		return "2.0"
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// versionRanges renders sorted versions compactly: "1-5, 7".
func versionRanges(vs []uint64) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", vs[i], vs[j]))
		} else {
			parts = append(parts, strconv.FormatUint(vs[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shorten cuts a metadata value for the text report.
func shorten(s string) string {
	const limit = 100
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// renderLance prints the inspection for people.
func renderLance(w io.Writer, ins *lanceInspection) error {
	p := &errWriter{w: w}
	p.printf("dataset   %s\n", ins.Dataset)
	p.printf("version   %d (latest %d; versions %s)\n", ins.Version, ins.LatestVersion, versionRanges(ins.Versions))
	p.printf("storage   data storage version %s", ins.StorageVersion)
	if ins.Writer != "" {
		p.printf(", written by %s", ins.Writer)
	}
	p.printf("\n")
	p.printf("rows      %s (%s physical, %s deleted) in %d fragment(s)\n", plan.Thousands(int64(ins.NumRows)),
		plan.Thousands(int64(ins.PhysicalRows)), plan.Thousands(int64(ins.DeletedRows)), len(ins.Fragments))
	for _, k := range sortedKeys(ins.SchemaMetadata) {
		p.printf("schema metadata %s = %s\n", k, shorten(ins.SchemaMetadata[k]))
	}
	p.printf("\nfragments:\n")
	p.printf("  %-6s %12s %10s  %-9s %s\n", "id", "rows", "deleted", "deletion", "data files (file version)")
	for _, f := range ins.Fragments {
		var files []string
		for _, df := range f.Files {
			files = append(files, fmt.Sprintf("%s (%s)", df.Path, df.FileVersion))
		}
		del := f.DeletionFile
		if del == "" {
			del = "-"
		}
		p.printf("  %-6d %12s %10s  %-9s %s\n", f.ID, plan.Thousands(int64(f.PhysicalRows)), plan.Thousands(int64(f.DeletedRows)), del, strings.Join(files, ", "))
	}
	p.printf("\nschema:\n")
	p.printf("  %-5s %-24s %-34s %s\n", "id", "name", "type", "notes")
	var walk func(f lanceField, depth int)
	walk = func(f lanceField, depth int) {
		var notes []string
		if !f.Nullable {
			notes = append(notes, "not null")
		}
		if f.Blob > 0 {
			notes = append(notes, fmt.Sprintf("blob v%d", f.Blob))
		} else if f.Extension != "" {
			notes = append(notes, "extension "+f.Extension)
		}
		if f.Type != f.LogicalType {
			notes = append(notes, "lance type "+f.LogicalType)
		}
		if f.Unsupported != "" {
			notes = append(notes, "UNSUPPORTED: "+f.Unsupported)
		}
		p.printf("  %-5d %-24s %-34s %s\n", f.ID, strings.Repeat("  ", depth)+f.Name, f.Type, strings.Join(notes, "; "))
		for _, k := range sortedKeys(f.Metadata) {
			p.printf("  %-5s %s  metadata %s = %s\n", "", strings.Repeat("  ", depth+1), k, shorten(f.Metadata[k]))
		}
		for _, c := range f.Children {
			walk(c, depth+1)
		}
	}
	for _, f := range ins.Fields {
		walk(f, 0)
	}
	p.printf("\ncolumns (stored, all fragments):\n")
	p.printf("  %-24s %-5s %-12s %6s %12s  %s\n", "path", "field", "file version", "pages", "bytes", "page encodings")
	for _, c := range ins.Columns {
		var encs []string
		for _, e := range c.Encodings {
			encs = append(encs, fmt.Sprintf("%d x %s", e.Pages, e.Encoding))
		}
		name := c.Path
		if strings.Contains(c.Encoding, "blob") {
			name += " [blob]"
		}
		p.printf("  %-24s %-5d %-12s %6d %12s  %s\n", name, c.FieldID, strings.Join(c.FileVersions, ","), c.Pages, plan.Thousands(int64(c.Bytes)), strings.Join(encs, "; "))
	}
	if ins.RowColumns != nil {
		p.printf("\nfirst %d row(s), JSON lines (columns: %s):\n", len(ins.Rows), strings.Join(ins.RowColumns, ", "))
		for _, r := range ins.Rows {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			p.printf("%s\n", b)
		}
	}
	return p.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (p *errWriter) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

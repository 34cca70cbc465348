package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
	flag "github.com/spf13/pflag"
)

// lance-inspect describes one version of a Lance dataset: its versions,
// schema, fragments, how every stored column is encoded, and optionally its
// first rows. It only reads: of a dataset in object storage, the listing,
// the manifest, each data file's footer and metadata, and the pages of the
// rows asked for.
//
// Rows print as JSON objects, values rendered by lancefmt.Head: binary
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
// JSON document: the command's status, then the dataset's description.
type lanceInspection struct {
	Command  string `json:"command"`
	OK       bool   `json:"ok"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Dataset  string `json:"dataset"`
	*lancefmt.Description
	// fetched is what reading a dataset in object storage fetched (nil
	// for a local one).
	*fetched
}

func cmdLanceInspect(e *env, fset *flag.FlagSet) runFunc {
	var o lanceInspectOptions
	var cols string
	fset.Uint64Var(&o.version, "dataset-version", 0, "inspect dataset version `N` (default: the latest); --version N is its deprecated spelling")
	fset.StringVar(&cols, "columns", "", "comma-separated top-level columns `NAMES` to describe and print (default: all)")
	fset.IntVar(&o.rows, "rows", 0, "also print the first `N` rows (JSON lines; under \"rows\" with --json)")
	return func(ctx context.Context, pos []string) (any, error) {
		o.versionSet = fset.Changed("dataset-version")
		if o.versionSet && o.version == 0 {
			return nil, &usageError{msg: "lance-inspect: --dataset-version 0: Lance versions start at 1", hint: "omit --dataset-version for the latest"}
		}
		if o.rows < 0 {
			return nil, usagef("lance-inspect: --rows %d: want a number of rows >= 0", o.rows)
		}
		for _, c := range strings.Split(cols, ",") {
			if c = strings.TrimSpace(c); c != "" && !contains(o.columns, c) {
				o.columns = append(o.columns, c)
			}
		}
		// The dataset is opened (in a bucket: listed) once; every read of
		// it in a bucket is counted.
		dir := pos[0]
		stats := &objstore.Stats{}
		t, err := srctree.Open(ctx, dir, objstore.Options{Stats: stats})
		var local *srctree.LocalError
		open := func(v lancefmt.OpenOptions) (*lancefmt.Dataset, error) { return lancestore.OpenTree(ctx, t, "", v) }
		switch {
		case errors.Is(err, objstore.ErrBadLocation):
			return nil, &usageError{msg: fmt.Sprintf("lance-inspect: %v", err), hint: "name object storage as s3://BUCKET/PREFIX"}
		case errors.As(err, &local):
			// lancefmt says what is wrong with the path.
			open = func(v lancefmt.OpenOptions) (*lancefmt.Dataset, error) { return lancestore.Open(ctx, dir, v, nil) }
		case err != nil:
			open = func(lancefmt.OpenOptions) (*lancefmt.Dataset, error) { return nil, fmt.Errorf("lance: %w", err) }
		case t.Remote():
			dir = t.Location()
		}
		ins, err := inspectLance(ctx, dir, o, open)
		if err != nil {
			return nil, err
		}
		if t != nil && t.Remote() {
			ins.fetched = &fetched{BytesFetched: stats.BytesRead(), Requests: stats.Requests()}
			e.infof("read %s in %s from %s", plan.HumanBytes(stats.BytesRead()), plan.CountText(stats.Requests(), "requests"), dir)
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
}

// inspectLance opens the dataset dir names with open (at the version it
// is given) and describes it, turning the reader's errors into the
// command's usage and input errors.
func inspectLance(ctx context.Context, dir string, o lanceInspectOptions, open func(lancefmt.OpenOptions) (*lancefmt.Dataset, error)) (*lanceInspection, error) {
	ds, err := open(lancefmt.OpenOptions{Version: o.version})
	if errors.Is(err, lancefmt.ErrVersionNotFound) {
		hint := ""
		if latest, lerr := open(lancefmt.OpenOptions{}); lerr == nil {
			hint = "the dataset has versions " + versionRanges(latest.Versions())
		}
		return nil, &usageError{msg: fmt.Sprintf("lance-inspect: %s: --dataset-version %d: no such version", dir, o.version), hint: hint}
	}
	var fe *lancefmt.UnsupportedFeaturesError
	if errors.As(err, &fe) {
		hint := ""
		if fe.Readable != 0 {
			hint = fmt.Sprintf("pass --dataset-version %d to inspect that version", fe.Readable)
		}
		return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err), hint: hint}
	}
	if err != nil && (errors.Is(err, objstore.ErrUnavailable) || errors.Is(err, objstore.ErrDenied) || errors.Is(err, objstore.ErrNoBucket)) {
		return nil, storeError("lance-inspect", err)
	}
	if err != nil {
		hint := "DATASET must be a Lance dataset directory (holding _versions/ and data/), for LanceDB tables DB/NAME.lance"
		if errors.Is(err, lancestore.ErrEmpty) {
			return nil, &inputError{err: fmt.Errorf("lance-inspect: %s holds no objects: no Lance dataset there", dir), hint: hint}
		}
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() && errors.Is(err, fs.ErrNotExist) {
			if _, verr := os.Stat(filepath.Join(dir, "_versions")); verr != nil {
				return nil, &inputError{err: fmt.Errorf("lance-inspect: %s is not a Lance dataset: it has no _versions directory", dir), hint: hint}
			}
		}
		return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err), hint: hint}
	}
	d, err := lancefmt.Describe(ctx, ds, lancefmt.DescribeOptions{Columns: o.columns, Rows: o.rows})
	var unknown *lancefmt.UnknownColumnError
	switch {
	case errors.As(err, &unknown):
		return nil, &usageError{msg: fmt.Sprintf("lance-inspect: %s: no column %q", dir, unknown.Column), hint: "columns: " + strings.Join(unknown.Columns, ", ")}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && lancestore.Err(ds) != nil:
		return nil, storeError("lance-inspect", lancestore.Err(ds))
	case err != nil:
		return nil, &inputError{err: fmt.Errorf("lance-inspect: %w", err)}
	}
	return &lanceInspection{Command: "lance-inspect", OK: true, Status: "ok", Dataset: dir, Description: d}, nil
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
	var walk func(f lancefmt.FieldInfo, depth int)
	walk = func(f lancefmt.FieldInfo, depth int) {
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

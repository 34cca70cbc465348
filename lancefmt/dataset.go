package lancefmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bpconvert/bpconvert/internal/capalloc"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// ErrVersionNotFound is returned by Open when the requested version has no
// manifest.
var ErrVersionNotFound = errors.New("version not found")

// OpenOptions tunes Open.
type OpenOptions struct {
	// Version selects a dataset version; 0 selects the latest.
	Version uint64
	// Allocator allocates the Arrow buffers that scans concatenate or fill
	// with nulls (decoded page buffers are Go memory); nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Storage reads the dataset's files; nil means LocalStorage (dir is a
	// path on this machine). See lancefmt/lancestore for datasets in
	// object storage.
	Storage Storage
}

// Dataset is one version of a Lance dataset opened for reading.
type Dataset struct {
	dir      string
	st       Storage         // reads the dataset's files
	ctx      context.Context // Open's, for the reads of methods that take none
	versions []uint64
	manifest *Manifest
	schema   *Schema
	alloc    memory.Allocator
}

// Open opens the Lance dataset in directory dir at the version chosen by
// opts: it lists _versions and reads the chosen manifest, nothing else.
// dir is a location of opts.Storage (a path on this machine by default).
func Open(ctx context.Context, dir string, opts OpenOptions) (*Dataset, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := opts.Storage
	if st == nil {
		st = LocalStorage{}
	}
	if isURL(dir) {
		dir = strings.TrimRight(dir, "/")
	}
	versions, names, err := listVersions(ctx, st, dir)
	if err != nil {
		return nil, fmt.Errorf("lance: %s: %w", dir, err)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("lance: %s: no manifest under _versions", dir)
	}
	v := opts.Version
	if v == 0 {
		v = versions[len(versions)-1]
	}
	name, ok := names[v]
	if !ok {
		return nil, fmt.Errorf("lance: %s: version %d: %w", dir, v, ErrVersionNotFound)
	}
	b, err := readStorage(ctx, st, joinPath(dir, "_versions", name))
	if err != nil {
		return nil, fmt.Errorf("lance: %s: %w", dir, err)
	}
	m, err := parseManifestFile(b)
	if err != nil {
		return nil, fmt.Errorf("lance: %s: version %d: %w", dir, v, err)
	}
	if err := m.checkPaired(); err != nil {
		return nil, fmt.Errorf("lance: %s: version %d: %w", dir, v, err)
	}
	if bad := m.unsupportedFlags(); bad != 0 {
		return nil, &UnsupportedFeaturesError{Dir: dir, Version: v, Flags: bad, Features: describeFeatures(bad), Readable: newestReadable(ctx, st, dir, versions, names, v)}
	}
	sc, err := newSchema(m.Fields, m.SchemaMetadata)
	if err != nil {
		return nil, fmt.Errorf("lance: %s: version %d: %w", dir, v, err)
	}
	alloc := opts.Allocator
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	return &Dataset{dir: dir, st: st, ctx: ctx, versions: versions, manifest: m, schema: sc, alloc: alloc}, nil
}

// newestReadable returns the newest version before v whose manifest sets
// no reader feature flag this package refuses, 0 when there is none. It
// reads at most 1000 manifests.
func newestReadable(ctx context.Context, st Storage, dir string, versions []uint64, names map[uint64]string, v uint64) uint64 {
	tried := 0
	for i := len(versions) - 1; i >= 0 && tried < 1000; i-- {
		if versions[i] >= v {
			continue
		}
		tried++
		b, err := readStorage(ctx, st, joinPath(dir, "_versions", names[versions[i]]))
		if err != nil {
			continue
		}
		m, err := parseManifestFile(b)
		if err == nil && m.checkPaired() == nil && m.unsupportedFlags() == 0 {
			return versions[i]
		}
	}
	return 0
}

// listVersions lists the committed versions under dir/_versions and the
// manifest file name of each.
func listVersions(ctx context.Context, st Storage, dir string) ([]uint64, map[uint64]string, error) {
	names := map[uint64]string{}
	var vs []uint64
	err := st.List(ctx, joinPath(dir, "_versions"), func(e FileInfo) error {
		if strings.Contains(e.Name, "/") {
			return nil // not a manifest: manifests lie directly in _versions
		}
		v, ok := manifestVersionFromName(e.Name)
		if !ok {
			return nil
		}
		if _, dup := names[v]; dup {
			return fmt.Errorf("_versions: version %d has two manifests (%s, %s)", v, names[v], e.Name)
		}
		names[v] = e.Name
		vs = append(vs, v)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) && len(vs) == 0 {
		return nil, nil, &fs.PathError{Op: "open", Path: joinPath(dir, "_versions"), Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, nil, err
	}
	return sortVersions(vs), names, nil
}

// Dir returns the dataset directory: its location as Open was given it
// (a path, or a URL such as s3://BUCKET/PREFIX).
func (d *Dataset) Dir() string { return d.dir }

// Storage returns the storage the dataset's files are read from.
func (d *Dataset) Storage() Storage { return d.st }

// Version returns the opened version.
func (d *Dataset) Version() uint64 { return d.manifest.Version }

// Versions returns every committed version of the dataset, oldest first.
func (d *Dataset) Versions() []uint64 { return append([]uint64(nil), d.versions...) }

// Manifest returns the decoded manifest of the opened version. Callers must
// not modify it.
func (d *Dataset) Manifest() *Manifest { return d.manifest }

// Schema returns the dataset schema.
func (d *Dataset) Schema() *Schema { return d.schema }

// Fragments returns the fragments of the opened version.
func (d *Dataset) Fragments() []Fragment { return d.manifest.Fragments }

// NumRows returns the number of rows of the opened version, deleted rows
// excluded.
func (d *Dataset) NumRows() uint64 { return d.manifest.NumRows() }

// basePath resolves a base path id to a directory, sub being "data" or
// "_deletions".
func (d *Dataset) basePath(id *uint32, sub string) (string, error) {
	if id == nil {
		return joinPath(d.dir, sub), nil
	}
	for _, bp := range d.manifest.BasePaths {
		if bp.ID == *id {
			if bp.IsDatasetRoot {
				return joinPath(bp.Path, sub), nil
			}
			return bp.Path, nil
		}
	}
	return "", fmt.Errorf("%w: unknown base path id %d", errCorrupt, *id)
}

// dataFilePath returns the location of a data file.
func (d *Dataset) dataFilePath(df *DataFile) (string, error) {
	base, err := d.basePath(df.BaseID, "data")
	if err != nil {
		return "", err
	}
	return joinPath(base, df.Path), nil
}

// Deleted returns the deleted row offsets of fragment fr, or nil when no row
// is deleted.
func (d *Dataset) Deleted(fr *Fragment) (*roaring.Bitmap, error) {
	df := fr.Deletion
	if df == nil {
		return nil, nil
	}
	base, err := d.basePath(df.BaseID, "_deletions")
	if err != nil {
		return nil, err
	}
	ext := "arrow"
	if df.Bitmap {
		ext = "bin"
	}
	p := joinPath(base, fmt.Sprintf("%d-%d-%d.%s", fr.ID, df.ReadVersion, df.ID, ext))
	b, err := d.readFile(d.ctx, p)
	if err != nil {
		return nil, fmt.Errorf("deletion file: %w", err)
	}
	var bm *roaring.Bitmap
	if df.Bitmap {
		bm, err = parseDeletionBitmap(b)
	} else {
		bm, err = parseDeletionArrow(b, d.alloc)
	}
	if err != nil {
		return nil, fmt.Errorf("deletion file %s: %w", basePath(p), err)
	}
	if bm.GetCardinality() != df.NumDeleted {
		return nil, fmt.Errorf("%w: deletion file %s lists %d rows, manifest says %d", errCorrupt, basePath(p), bm.GetCardinality(), df.NumDeleted)
	}
	return bm, nil
}

// parseDeletionBitmap decodes a roaring bitmap deletion file.
func parseDeletionBitmap(b []byte) (*roaring.Bitmap, error) {
	bm := roaring.New()
	if _, err := bm.ReadFrom(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("%w: roaring bitmap: %v", errCorrupt, err)
	}
	return bm, nil
}

// parseDeletionArrow decodes an Arrow IPC deletion file: one column of
// UInt32 (or Int32) row offsets.
func parseDeletionArrow(b []byte, alloc memory.Allocator) (bm *roaring.Bitmap, err error) {
	defer func() {
		// arrow-go's IPC reader may panic on hostile flatbuffers.
		if r := recover(); r != nil {
			bm, err = nil, fmt.Errorf("%w: arrow ipc: %v", errCorrupt, r)
		}
	}()
	if err := checkArrowIPCFile(b); err != nil {
		return nil, err
	}
	// Bound what hostile lengths in the IPC metadata can make the reader
	// allocate: a real deletion file decodes to a few times its size.
	limited := capalloc.New(alloc, capalloc.Limits{Total: 64*int64(len(b)) + 1<<20})
	rd, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(limited))
	if err != nil {
		return nil, fmt.Errorf("%w: arrow ipc: %v", errCorrupt, err)
	}
	defer rd.Close()
	bm = roaring.New()
	for i := 0; i < rd.NumRecords(); i++ {
		rec, err := rd.RecordBatchAt(i)
		if err != nil {
			return nil, fmt.Errorf("%w: arrow ipc: %v", errCorrupt, err)
		}
		if rec.NumCols() != 1 {
			rec.Release()
			return nil, fmt.Errorf("%w: deletion batch has %d columns", errCorrupt, rec.NumCols())
		}
		switch col := rec.Column(0).(type) {
		case *array.Uint32:
			bm.AddMany(col.Uint32Values())
		case *array.Int32:
			for _, v := range col.Int32Values() {
				if v < 0 {
					rec.Release()
					return nil, fmt.Errorf("%w: negative deleted row %d", errCorrupt, v)
				}
				bm.Add(uint32(v))
			}
		default:
			rec.Release()
			return nil, fmt.Errorf("%w: deletion column of type %s", errCorrupt, col.DataType())
		}
		rec.Release()
	}
	return bm, nil
}

// errCorrupt is wrapped by every decoding error caused by malformed input
// (the same sentinel as the wire decoder's).
var errCorrupt = wire.ErrCorrupt

package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The column indexes of repeated leaves, written again.
//
// arrow-go counts the values of a page of a repeated leaf wrong: an empty
// or null list (or a null parent above the list) counts as a null of the
// leaf and is also taken off the page's non-null values. A page holding
// nulls only then looks like a page with values but no minimum and
// maximum, and arrow-go drops the column index of its whole column chunk;
// a page holding as many values as empty lists looks like a page of nulls
// only, and the column index arrow-go writes marks it so, wrongly. So
// after the table is written, the column index of every repeated leaf is
// built again from its pages' headers: a page is null when its null count
// (which arrow-go reports as the page's levels less its values) equals
// its levels, else it carries the minimum and maximum of its statistics.
// A page with values but no minimum or maximum leaves its chunk without a
// column index: no index is better than a wrong one.

// fixColumnIndexes rewrites the column indexes of the repeated leaves of
// the parquet file f, which arrow-go wrote and closed, and the footer
// that points at them. It does nothing to a file without a page index.
func fixColumnIndexes(f *os.File, mem memory.Allocator) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	rp := pq.NewReaderProperties(mem)
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, size), file.WithReadProps(rp))
	if err != nil {
		return fmt.Errorf("reading back: %w", err)
	}
	md := pf.MetaData()
	footer := size - 8 - int64(md.Size())
	if md.Size() <= 0 || footer < 4 {
		return errors.New("reading back: footer size unknown")
	}
	var blobs bytes.Buffer
	changed := false
	for r := 0; r < md.NumRowGroups(); r++ {
		for c := 0; c < md.Schema.NumColumns(); c++ {
			descr := md.Schema.Column(c)
			chunk := md.RowGroups[r].Columns[c]
			if descr.MaxRepetitionLevel() == 0 || chunk.OffsetIndexOffset == nil {
				continue
			}
			ci, err := pageColumnIndex(pf, r, c, mem)
			if err != nil {
				return fmt.Errorf("reading back: row group %d column %s: %w", r, descr.ColumnPath(), err)
			}
			changed = true
			if ci == nil {
				chunk.ColumnIndexOffset, chunk.ColumnIndexLength = nil, nil
				continue
			}
			off, n := footer+int64(blobs.Len()), int32(len(ci))
			blobs.Write(ci)
			chunk.ColumnIndexOffset, chunk.ColumnIndexLength = &off, &n
		}
	}
	if !changed {
		return nil
	}
	return writeFooter(f, footer, blobs.Bytes(), md)
}

// writeFooter replaces everything of f from offset footer on with
// indexes, the file metadata md and the parquet trailer.
func writeFooter(f *os.File, footer int64, indexes []byte, md *metadata.FileMetaData) error {
	var meta bytes.Buffer
	if _, err := md.WriteTo(&meta, nil); err != nil {
		return err
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], uint32(meta.Len()))
	copy(trailer[4:], "PAR1")
	out := append(append(append([]byte{}, indexes...), meta.Bytes()...), trailer[:]...)
	if err := f.Truncate(footer); err != nil {
		return err
	}
	if _, err := f.WriteAt(out, footer); err != nil {
		return err
	}
	return nil
}

// pageColumnIndex returns the serialized column index of column c of row
// group r, computed from its values: its pages are those of the chunk's
// offset index, which begin at row boundaries. It returns nil for a chunk
// with a page of values none of which has an order (NaNs only), which
// has no column index.
func pageColumnIndex(pf *file.Reader, r, c int, mem memory.Allocator) ([]byte, error) {
	pir := pf.GetPageIndexReader()
	rr, err := pir.RowGroup(r)
	if err != nil || rr == nil {
		return nil, fmt.Errorf("offset index: %v", err)
	}
	oi, err := rr.GetOffsetIndex(c)
	if err != nil || oi == nil {
		return nil, fmt.Errorf("offset index: %v", err)
	}
	firstRows := make([]int64, 0, len(oi.GetPageLocations()))
	for _, l := range oi.GetPageLocations() {
		firstRows = append(firstRows, l.FirstRowIndex)
	}
	cr, err := pf.RowGroup(r).Column(c)
	if err != nil {
		return nil, err
	}
	descr := pf.MetaData().Schema.Column(c)
	b := metadata.NewColumnIndexBuilder(descr)
	pi := pageIndexer{descr: descr, mem: mem, firstRows: firstRows, b: b}
	switch rd := cr.(type) {
	case *file.BooleanColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]bool, batchLevels))
	case *file.Int32ColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]int32, batchLevels))
	case *file.Int64ColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]int64, batchLevels))
	case *file.Int96ColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]pq.Int96, batchLevels))
	case *file.Float32ColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]float32, batchLevels))
	case *file.Float64ColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]float64, batchLevels))
	case *file.ByteArrayColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]pq.ByteArray, batchLevels))
	case *file.FixedLenByteArrayColumnChunkReader:
		err = indexPages(&pi, rd.ReadBatch, make([]pq.FixedLenByteArray, batchLevels))
	default:
		return nil, fmt.Errorf("column reader %T", cr)
	}
	if err != nil {
		return nil, err
	}
	if pi.page != len(firstRows)-1 {
		return nil, fmt.Errorf("%d pages in the offset index, values for %d", len(firstRows), pi.page+1)
	}
	if err := b.Finish(); err != nil {
		return nil, err
	}
	if b.Build() == nil {
		return nil, nil // a page with values but no minimum or maximum (NaNs only)
	}
	var out bytes.Buffer
	if _, err := b.WriteTo(&out, nil); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// batchLevels is how many levels pageColumnIndex reads at once.
const batchLevels = 4096

// pageIndexer follows the pages of a column chunk while its levels are
// read, and adds each page to a column index builder when it ends.
type pageIndexer struct {
	descr     *schema.Column
	mem       memory.Allocator
	firstRows []int64 // of each page, from the offset index
	b         metadata.ColumnIndexBuilder
	page      int   // the current page
	row       int64 // the current row, -1 before the first
	levels    int64 // of the current page
	stats     metadata.TypedStatistics
}

// valueStats are the typed statistics of values of type T.
type valueStats[T any] interface {
	Update(values []T, numNull int64)
}

// indexPages reads the levels and values of a column chunk with read and
// adds its pages to pi.b.
func indexPages[T any](pi *pageIndexer, read func(int64, []T, []int16, []int16) (int64, int, error), values []T) error {
	def, rep := make([]int16, batchLevels), make([]int16, batchLevels)
	pi.row = -1
	pi.stats = metadata.NewStatistics(pi.descr, pi.mem)
	maxDef := pi.descr.MaxDefinitionLevel()
	for {
		n, nv, err := read(batchLevels, values, def, rep)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		v, from := 0, 0 // values seen in the batch; the first not yet counted
		for i := int64(0); i < n; i++ {
			if rep[i] == 0 {
				pi.row++
				if pi.page+1 < len(pi.firstRows) && pi.row >= pi.firstRows[pi.page+1] {
					pi.stats.(valueStats[T]).Update(values[from:v], 0)
					if err := pi.endPage(); err != nil {
						return err
					}
					from = v
				}
			}
			pi.levels++
			if def[i] == maxDef {
				v++
			}
		}
		if v != nv {
			return fmt.Errorf("%d values read, %d levels at the leaf", nv, v)
		}
		pi.stats.(valueStats[T]).Update(values[from:v], 0)
	}
	return pi.endPage()
}

// endPage adds the current page to the column index and starts the next.
func (pi *pageIndexer) endPage() error {
	st, err := pi.stats.Encode()
	if err != nil {
		return err
	}
	nulls := pi.levels - pi.stats.NumValues()
	page := metadata.EncodedStatistics{HasNullCount: true, NullCount: nulls, AllNullValue: pi.stats.NumValues() == 0}
	if !page.AllNullValue && st.HasMin && st.HasMax {
		page.HasMin, page.HasMax, page.Min, page.Max = true, true, st.Min, st.Max
	}
	if err := pi.b.AddPage(&page); err != nil {
		return err
	}
	if pi.levels > 0 && pi.page+1 < len(pi.firstRows) {
		pi.page++
	}
	pi.levels = 0
	pi.stats = metadata.NewStatistics(pi.descr, pi.mem)
	return nil
}

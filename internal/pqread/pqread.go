// Package pqread opens parquet tables with arrow-go's Arrow reader where
// that reader, given the table's stored Arrow schema as it is, refuses
// tables other writers read. It is not a reader of its own: it only
// adjusts what arrow-go is given.
package pqread

import (
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Open returns arrow-go's reader of pf and the Arrow schema it
// reads. arrow-go refuses a table whose stored Arrow schema gives field
// metadata to an extension type it knows over a storage it reads as
// another type (a JSON field with metadata: "mismatch storage type"), so
// the reader is given the stored schema without the field metadata of
// extension-typed fields; callers that need the metadata take it from the
// stored schema themselves.
func Open(pf *file.Reader, props pqarrow.ArrowReadProperties, mem memory.Allocator) (*pqarrow.FileReader, *arrow.Schema, error) {
	for _, kv := range pf.MetaData().KeyValueMetadata() {
		if kv.Key != "ARROW:schema" || kv.Value == nil {
			continue
		}
		if plain := readerSchema(*kv.Value, mem); plain != "" {
			stored := kv.Value
			kv.Value = &plain
			defer func() { kv.Value = stored }()
		}
	}
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		return nil, nil, err
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, nil, err
	}
	return fr, sc, nil
}

// readerSchema returns the stored Arrow schema v (base64) without field
// metadata on extension-typed fields, "" when it has none or v does not
// decode.
func readerSchema(v string, mem memory.Allocator) string {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(v); err != nil {
			return ""
		}
	}
	sc, err := deserializeSchema(b, mem)
	if err != nil {
		return ""
	}
	changed := false
	fields := sc.Fields()
	for i := range fields {
		fields[i] = withoutExtMeta(fields[i], &changed)
	}
	if !changed {
		return ""
	}
	meta := sc.Metadata()
	return base64.StdEncoding.EncodeToString(flight.SerializeSchema(arrow.NewSchema(fields, &meta), mem))
}

// withoutExtMeta returns f with no field metadata on any extension-typed
// field at any depth; changed is set when it removed some.
func withoutExtMeta(f arrow.Field, changed *bool) arrow.Field {
	if _, ok := f.Type.(arrow.ExtensionType); ok && f.Metadata.Len() > 0 {
		f.Metadata = arrow.Metadata{}
		*changed = true
		return f
	}
	switch t := f.Type.(type) {
	case *arrow.StructType:
		fields := t.Fields()
		for i := range fields {
			fields[i] = withoutExtMeta(fields[i], changed)
		}
		f.Type = arrow.StructOf(fields...)
	case *arrow.MapType:
		m := arrow.MapOfFields(withoutExtMeta(t.KeyField(), changed), withoutExtMeta(t.ItemField(), changed))
		m.KeysSorted = t.KeysSorted
		f.Type = m
	case *arrow.ListType:
		f.Type = arrow.ListOfField(withoutExtMeta(t.ElemField(), changed))
	case *arrow.LargeListType:
		f.Type = arrow.LargeListOfField(withoutExtMeta(t.ElemField(), changed))
	case *arrow.FixedSizeListType:
		f.Type = arrow.FixedSizeListOfField(t.Len(), withoutExtMeta(t.ElemField(), changed))
	}
	return f
}

// deserializeSchema decodes an IPC schema message, turning a panic of the
// decoder on malformed bytes into an error.
func deserializeSchema(b []byte, mem memory.Allocator) (sc *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Arrow schema: %v", r)
		}
	}()
	return flight.DeserializeSchema(b, mem)
}

// Command lancebench scans one binary column of a Lance dataset with the
// pure-Go reader, for bench/lancefmt.sh.
//
//	go run ./lance/internal/lancebench DATASET COLUMN
//
// It reads the column batch by batch, adds up the value lengths and prints
// one JSON line {rows, bytes, seconds}; seconds cover opening the dataset
// and the scan, not the program's start-up. It is a measuring tool, not
// part of bpconvert.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bpconvert/bpconvert/lancefmt"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: lancebench DATASET COLUMN")
		os.Exit(2)
	}
	r, err := scan(context.Background(), os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "lancebench: %v\n", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false) // encoding names hold < and >
	enc.Encode(r)
}

// result is what one scan measured.
type result struct {
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// Storage is the dataset's data storage version and Encoding the page
	// encoding of the column's first page, to tell what was measured.
	Storage  string `json:"storage"`
	Encoding string `json:"encoding"`
}

// scan reads column of the dataset in dir and returns its rows and the
// total length of its values.
func scan(ctx context.Context, dir, column string) (*result, error) {
	start := time.Now()
	ds, err := lancefmt.Open(ctx, dir, lancefmt.OpenOptions{})
	if err != nil {
		return nil, err
	}
	sc, err := ds.Scan(ctx, lancefmt.ScanOptions{Columns: []string{column}})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var rows, n int64
	for sc.Next() {
		rec := sc.RecordBatch()
		rows += rec.NumRows()
		switch a := rec.Column(0).(type) {
		case *array.Binary:
			if o := a.ValueOffsets(); len(o) > 0 {
				n += int64(o[len(o)-1] - o[0])
			}
		case *array.LargeBinary:
			if o := a.ValueOffsets(); len(o) > 0 {
				n += o[len(o)-1] - o[0]
			}
		default:
			return nil, fmt.Errorf("%s: column %q is %s, not binary", dir, column, a.DataType())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	r := &result{Rows: rows, Bytes: n, Seconds: time.Since(start).Seconds(), Storage: ds.Manifest().DataVersion}
	if frs := ds.Fragments(); len(frs) > 0 {
		ces, err := ds.ColumnEncodings(&frs[0], []string{column})
		if err != nil {
			return nil, err
		}
		if len(ces) > 0 && len(ces[0].Pages) > 0 {
			r.Encoding = ces[0].Pages[0].Encoding
		}
	}
	return r, nil
}

package lancefmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path/filepath"
	"strconv"
	"strings"
)

// WriteSharedBlobDataset writes into dstDir (absent or empty) a copy of
// src in which rows of the blob v2 column named column share stored blobs.
// It exists to make test datasets for the ref_id sharing of blob v2
// descriptors proposed in lance-format/lance#6587, which released Lance
// cannot write; it is not a way to deduplicate real data.
//
// Rows are named by row address: fragment id<<32 | physical row offset (the
// offset itself in fragment 0); deleted rows may be named. Each group lists
// two or more distinct, non-null rows of one fragment; its first row keeps
// its blob and every other row gets a copy of that row's descriptor (kind,
// position, size, sidecar blob id), an inline payload being stored once.
// The rows of groups[k] get ref_id k+1; the rows of unmarked groups share
// the same way with ref_id 0, so that only equal coordinates tell they
// share. Every other row keeps its bytes and gets ref_id 0. A row may be
// in one group only; external blobs are refused.
//
// The output is written by Dataset.Rewrite: the other columns are
// page-copied, the blob column becomes one page of 6-field descriptors
// (kind, position, size, blob_id, blob_uri, ref_id) per fragment, sidecar
// blob files are copied, and the schema metadata gains the key "fixture".
// src must have no other blob column.
func WriteSharedBlobDataset(ctx context.Context, src *Dataset, column, dstDir string, groups, unmarked [][]uint64) error {
	fail := func(err error) error {
		return fmt.Errorf("lance: %s: shared-blob dataset of %q: %w", src.dir, column, err)
	}
	f := src.schema.Field(column)
	if f == nil {
		return fail(errors.New("no such column"))
	}
	if f.BlobVersion() != 2 {
		return fail(errors.New("not a blob v2 column"))
	}
	rows := map[uint64][]blobDescriptor{}
	sidecars := map[uint64]string{}
	files := blobFiles{ctx: ctx, ds: src}
	defer files.close()
	for i := range src.manifest.Fragments {
		fr := &src.manifest.Fragments[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		blobs, err := src.fragmentBlobRows(fr, f, &files, nil)
		if err != nil {
			return fail(err)
		}
		descs := make([]blobDescriptor, len(blobs))
		for j := range blobs {
			b := &blobs[j]
			d := &descs[j]
			d.Null, d.Kind = b.Null, uint8(b.Kind)
			switch {
			case b.Null:
			case b.Kind == BlobInline:
				if b.Size > 0 {
					r, err := b.ReaderAt()
					if err == nil {
						d.Payload, err = io.ReadAll(r)
					}
					if err != nil {
						return fail(fmt.Errorf("fragment %d row %d: %w", fr.ID, j, err))
					}
				}
			case b.Kind == BlobPacked || b.Kind == BlobDedicated:
				d.Position, d.Size = uint64(b.Location.Offset), uint64(b.Location.Size)
				id, err := sidecarBlobID(b.Location.Path)
				if err != nil {
					return fail(fmt.Errorf("fragment %d row %d: %w", fr.ID, j, err))
				}
				d.BlobID = id
				sidecars[fr.ID] = filepath.Dir(b.Location.Path)
			default:
				return fail(fmt.Errorf("fragment %d row %d: %s blobs are not supported", fr.ID, j, b.Kind))
			}
		}
		rows[fr.ID] = descs
	}
	seen := map[uint64]bool{}
	share := func(g []uint64, ref uint32, what string) error {
		if len(g) < 2 {
			return fmt.Errorf("%s lists %d rows, want at least 2", what, len(g))
		}
		frag := g[0] >> 32
		descs := rows[frag]
		for _, a := range g {
			if a>>32 != frag {
				return fmt.Errorf("%s: rows %#x and %#x are in different fragments", what, g[0], a)
			}
			off := a & (1<<32 - 1)
			if off >= uint64(len(descs)) {
				return fmt.Errorf("%s: no row %d in fragment %d", what, off, frag)
			}
			if seen[a] {
				return fmt.Errorf("%s: row %#x is in another group", what, a)
			}
			seen[a] = true
			if descs[off].Null {
				return fmt.Errorf("%s: row %#x is null", what, a)
			}
		}
		first := int(g[0] & (1<<32 - 1))
		keep := descs[first]
		keep.RefID = ref
		descs[first] = keep
		for _, a := range g[1:] {
			d := keep
			if d.Kind == uint8(BlobInline) {
				d.Payload, d.SameAs = nil, first+1
			}
			descs[a&(1<<32-1)] = d
		}
		return nil
	}
	for k, g := range groups {
		if err := share(g, uint32(k+1), fmt.Sprintf("group %d", k)); err != nil {
			return fail(err)
		}
	}
	for k, g := range unmarked {
		if err := share(g, 0, fmt.Sprintf("unmarked group %d", k)); err != nil {
			return fail(err)
		}
	}
	hook := func(frag uint64) ([]blobDescriptor, string, error) { return rows[frag], sidecars[frag], nil }
	_, err := src.Rewrite(ctx, dstDir, RewriteOptions{
		SchemaMetadata:  map[string]string{"fixture": "blob v2 descriptors with ref_id (lance-format/lance#6587), written by bpconvert's lance.WriteSharedBlobDataset"},
		blobDescriptors: map[string]blobDescriptorHook{column: hook},
	})
	return err
}

// sidecarBlobID parses the blob id out of a sidecar file name (the id's 32
// bits reversed, as binary digits; see blobSidecarName).
func sidecarBlobID(path string) (uint32, error) {
	name := filepath.Base(path)
	v, err := strconv.ParseUint(strings.TrimSuffix(name, ".blob"), 2, 32)
	if err != nil || !strings.HasSuffix(name, ".blob") {
		return 0, fmt.Errorf("%w: sidecar blob file name %q", errCorrupt, name)
	}
	return bits.Reverse32(uint32(v)), nil
}

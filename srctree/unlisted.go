package srctree

import (
	"context"

	"github.com/bpconvert/bpconvert/objstore"
)

// OpenUnlisted opens loc as OpenSource does, but lists nothing in a
// bucket: there, whether loc names an object or a prefix would take a
// request to find out, so the tree is rooted at loc, file is "", and its
// objects are looked up by name (one HEAD request each, when Stat, Open or
// ReadFile first asks for them), while Walk and IsDir see none. It is for
// a reader that names the few files it reads, or makes its own requests
// through Store (a pack set lists a pack directory's shards, or reads the
// one shard named), where a listing of the tree would be a request too
// many.
func OpenUnlisted(ctx context.Context, loc string, o objstore.Options) (t *Tree, file string, err error) {
	if !objstore.IsRemote(loc) {
		return OpenSource(ctx, loc, o)
	}
	bucket, prefix, err := objstore.ParseS3(loc)
	if err != nil {
		return nil, "", err
	}
	st, err := objstore.Open(ctx, "s3://"+bucket, o)
	if err != nil {
		return nil, "", err
	}
	t = &Tree{loc: "s3://" + bucket, store: st, byName: map[string]int{}, looked: map[string]Entry{}, stats: o.Stats}
	if prefix != "" {
		t.loc += "/" + prefix
		t.prefix = prefix + "/"
	}
	return t, "", nil
}

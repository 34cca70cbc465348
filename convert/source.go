package convert

import (
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
)

// Source is a converter's source, opened once by the caller
// (srctree.OpenSource, or the converter package's OpenSource, which words
// its failures) and handed to the converter in Options: the tree of the
// dataset's files, on this machine or in a bucket, and the one file of it
// that SRC names when SRC names a file. Converters read the source only
// through it, and report what reading it fetched (Fetched).
type Source struct {
	// Tree is the opened dataset: the directory or prefix SRC names, or
	// the one that holds the file SRC names.
	Tree *srctree.Tree
	// File is the file SRC names, by its name in Tree; "" when SRC names
	// the tree itself.
	File string
	// Name is the location as it was given, for messages ("" for
	// Location).
	Name string
	// Parts, for a source named by several locations (WebDataset's shard
	// files, directories and brace patterns), are each of them opened;
	// Tree and File are then unset. Every part was opened with the same
	// counts (objstore.Options.Stats). Of Parts, only the directories and
	// prefixes must be disjoint from the output (CheckDisjoint): a file's
	// own directory may hold it.
	Parts []Source
	// Files, when set, are the files the dataset is made of, each opened
	// (Tree and File), as the converter's opener found them (WebDataset's
	// shards, which a directory holds beside other files): what identifies
	// a run (Identify). When nil, every file of Tree (or of each of Parts)
	// does.
	Files []Source
}

// Opened reports whether the source was opened (a zero Source, such as
// standard input, was not).
func (s Source) Opened() bool { return s.Tree != nil || len(s.Parts) > 0 }

// Location names the source for people and records: the file's path or
// s3:// location when SRC names a file, else the tree's root ("" for a
// zero Source, or one of Parts).
func (s Source) Location() string {
	switch {
	case s.Tree == nil:
		return ""
	case s.File != "":
		return s.Tree.Path(s.File)
	}
	return s.Tree.Location()
}

// String is Name, or Location when Name is "".
func (s Source) String() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Location()
}

// Remote reports whether the source is in object storage (for Parts,
// whether any part is).
func (s Source) Remote() bool {
	for _, p := range s.Parts {
		if p.Remote() {
			return true
		}
	}
	return s.Tree != nil && s.Tree.Remote()
}

// Fetched says what opening and reading a source in object storage has
// fetched so far, from the counts its tree was opened with, for a plan or
// a summary; nil for a local source (or one opened without counts).
func (s Source) Fetched() *plan.Fetched {
	for _, p := range s.Parts {
		if f := p.Fetched(); f != nil {
			return f
		}
	}
	if s.Tree == nil || !s.Tree.Remote() || s.Tree.Stats() == nil {
		return nil
	}
	st := s.Tree.Stats()
	return &plan.Fetched{BytesFetched: st.BytesRead(), Requests: st.Requests()}
}

package convert_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/srctree"
	"github.com/bpconvert/bpconvert/stage"
)

// TestSource: an opened source, on disk and in a bucket (versitygw), is
// identified from its tree, says what reading it fetched (nothing for a
// local one), and is kept apart from a destination by CheckDisjoint, which
// names it as it was given.
func TestSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := s3test.Start(t, "src")
	files := map[string]string{"a.tar": "first shard", "sub/b.tar": "second"}
	root := filepath.Join(t.TempDir(), "ds")
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("ds/" + name), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		loc, where string
		remote     bool
	}{
		{root, root, false},
		{"s3://src/ds", "s3://src/ds", true},
		{filepath.Join(root, "a.tar"), filepath.Join(root, "a.tar"), false},
		{"s3://src/ds/a.tar", "s3://src/ds/a.tar", true},
	} {
		t.Run(c.loc, func(t *testing.T) {
			tr, file, err := srctree.OpenSource(ctx, c.loc, srv.Reach(objstore.Options{Stats: &objstore.Stats{}}))
			if err != nil {
				t.Fatal(err)
			}
			src := convert.Source{Tree: tr, File: file, Name: "given"}
			if !src.Opened() || src.Location() != c.where || src.Remote() != c.remote || src.String() != "given" {
				t.Fatalf("opened %v, at %s, remote %v, named %s", src.Opened(), src.Location(), src.Remote(), src)
			}
			f := src.Fetched()
			if (f != nil) != c.remote || c.remote && f.Requests == 0 {
				t.Fatalf("fetched %+v", f)
			}
			ids, err := convert.Identify(ctx, []convert.Source{src})
			if err != nil {
				t.Fatal(err)
			}
			want := len(files)
			if file != "" {
				want = 1
			}
			if len(ids) != want {
				t.Fatalf("identified %+v", ids)
			}
			for _, id := range ids {
				rel := strings.TrimPrefix(strings.TrimPrefix(id.Path, strings.TrimSuffix(c.loc, "/a.tar")), "/")
				if id.Size != int64(len(files[filepath.ToSlash(rel)])) || c.remote != strings.Contains(id.ModTime, " ") {
					t.Errorf("identified %+v (%s)", id, rel)
				}
			}
			if c.remote {
				if g := src.Fetched(); g.Requests < f.Requests {
					t.Errorf("fetched %+v after %+v", g, f)
				}
				return
			}
			inside, err := convert.ParseDest(filepath.Join(root, "out"), "")
			if err != nil {
				t.Fatal(err)
			}
			if err := convert.CheckDisjoint(src, inside); !errors.Is(err, stage.ErrOverlap) || !strings.HasPrefix(err.Error(), "given and ") {
				t.Errorf("a destination inside the source: %v", err)
			}
			outside, err := convert.ParseDest(filepath.Join(t.TempDir(), "out"), "")
			if err != nil {
				t.Fatal(err)
			}
			if err := convert.CheckDisjoint(convert.Source{Parts: []convert.Source{src}}, outside); err != nil {
				t.Errorf("a destination outside the source: %v", err)
			}
			// Of several parts only directories must be disjoint from the
			// output: a file's own directory may hold it.
			err = convert.CheckDisjoint(convert.Source{Parts: []convert.Source{src}}, inside)
			switch {
			case src.File != "" && err != nil:
				t.Errorf("a destination beside a file part: %v", err)
			case src.File == "" && !errors.Is(err, stage.ErrOverlap):
				t.Errorf("a destination inside a part: %v", err)
			}
		})
	}
}

// TestIdentifyFiles: a source's Files, when set, are what identifies it
// (a WebDataset directory's shards, not the other files beside them); a
// source of Parts is identified by its parts.
func TestIdentifyFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, data := range map[string]string{"a.tar": "aa", "b.tar": "bbb", "notes.txt": "n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := srctree.Open(ctx, dir, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole := convert.Source{Tree: tree}
	shards := convert.Source{Tree: tree, Files: []convert.Source{{Tree: tree, File: "b.tar"}, {Tree: tree, File: "a.tar"}}}
	parts := convert.Source{Parts: []convert.Source{{Tree: tree, File: "notes.txt"}, whole}}
	for _, c := range []struct {
		name string
		src  convert.Source
		want []string
	}{
		{"tree", whole, []string{"a.tar", "b.tar", "notes.txt"}},
		{"files", shards, []string{"a.tar", "b.tar"}},
		{"parts", parts, []string{"a.tar", "b.tar", "notes.txt", "notes.txt"}},
	} {
		ids, err := convert.Identify(ctx, []convert.Source{c.src})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids {
			got = append(got, filepath.Base(id.Path))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: identified %q, want %q", c.name, got, c.want)
		}
	}
	// The caller's slice is read, never written (its spare room included).
	srcs := make([]convert.Source, 1, 4)
	srcs[0] = parts
	if _, err := convert.Identify(ctx, srcs); err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs[1:cap(srcs)] {
		if s.Opened() {
			t.Fatalf("Identify wrote into its caller's slice: %+v", srcs[:cap(srcs)])
		}
	}
}

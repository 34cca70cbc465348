package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestS3LerobotAppendReads appends to the conversion of a LeRobot v3.0
// dataset in a bucket (camera files of 320x240 noise, 0.4 to 0.8 MB per
// episode and camera) after episode 5 was concatenated to file-001 of each
// camera: the append fetches, through a proxy that counts the bytes, the
// files of meta/, the grown data file and, of each grown camera file, its
// MP4 boxes and the new episode's packets, never the packets of episodes 3
// and 4 that the file also holds. The bound allows, per grown camera file,
// its growth (the new packets and the larger moov box) plus three 64 KiB
// blocks (the scan's reads around the boxes, the cut's first buffer after
// the header), plus the prefix's listing; the committed footage of those
// files alone is larger than the whole bound.
func TestS3LerobotAppendReads(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	proxy := s3test.NewProxy(t, srv)
	cache := t.TempDir()
	dir := filepath.Join(t.TempDir(), "ds")
	growDataset(t, dir, "v3.0", "0,1,2/3,4", cache, "--size", "320x240")
	upload(t, srv, dir, "src", "ds")
	src := "s3://src/ds"
	dst := filepath.Join(t.TempDir(), "out")
	if r := bpS3(t, srv.Env(), "convert-lerobot", src, dst, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}

	before := localTree(t, dir)
	growDataset(t, dir, "v3.0", "0,1,2/3,4,5", cache, "--size", "320x240")
	after := localTree(t, dir)
	var bound, committedFootage int64
	for rel, b := range after {
		old, had := before[rel]
		switch {
		case strings.HasPrefix(rel, "meta/"):
			bound += int64(len(b)) // every file of meta/ is read
		case had && bytes.Equal(old, b):
			continue // unchanged: not uploaded again, not read
		case strings.HasSuffix(rel, ".mp4"):
			bound += int64(len(b)-len(old)) + 3*64<<10
			committedFootage += int64(len(old))
		default:
			bound += int64(len(b)) // a grown table is copied whole
		}
		if !had || !bytes.Equal(old, b) {
			if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"),
				Key: aws.String("ds/" + rel), Body: bytes.NewReader(b)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bound += 64 << 10 // the listing
	if committedFootage < bound {
		t.Fatalf("the grown camera files hold %d bytes of converted footage, less than the bound %d: the test could not tell", committedFootage, bound)
	}

	start := proxy.BytesSent()
	r := bpS3(t, proxy.Env(srv), "convert-lerobot", src, dst, "--append", "--yes", "--json")
	fetched := proxy.BytesSent() - start
	if r.code != exitOK {
		t.Fatalf("append: exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	a, _ := doc["appended"].(map[string]any)
	t.Logf("the append fetched %d bytes (%v by the summary); bound %d; the grown camera files hold %d bytes the output holds already",
		fetched, doc["bytes_fetched"], bound, committedFootage)
	if a["sources"] != 1.0 || a["blobs"] != 2.0 {
		t.Fatalf("summary %v", doc)
	}
	if fetched > bound || int64(doc["bytes_fetched"].(float64)) > fetched {
		t.Errorf("the append fetched %d bytes (summary %v), more than the bound %d", fetched, doc["bytes_fetched"], bound)
	}
	if r := bpS3(t, srv.Env(), "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if eps := episodesOf(t, dst); len(eps) != 6 {
		t.Fatalf("the video index holds episodes %v", eps)
	}
}

// TestS3LerobotAppendDest appends new episodes (into the last files, then
// new files) to a conversion in a bucket and, side by side, to the same
// conversion in a local directory: after each append the bucket holds
// byte for byte what the directory holds (the record aside), verify
// --against the dataset passes on the bucket's copy, and a rerun is
// already done.
func TestS3LerobotAppendDest(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "dst")
	env := srv.Env()
	cache := t.TempDir()
	src := filepath.Join(t.TempDir(), "ds")
	local := filepath.Join(t.TempDir(), "out")
	remote := "s3://dst/out"
	growDataset(t, src, "v3.0", "0,1,2/3,4", cache)
	for _, groups := range []string{"", "0,1,2/3,4,5", "0,1,2/3,4,5/6,7"} {
		if groups != "" {
			growDataset(t, src, "v3.0", groups, cache)
		}
		for _, dst := range []string{local, remote} {
			args := []string{"convert-lerobot", src, dst, "--append", "--yes", "--json"}
			if dst == remote {
				args = append(args, "--staging", t.TempDir())
			}
			r := bpS3(t, env, args...)
			if r.code != exitOK || lastJSON(t, r)["status"] != "ok" {
				t.Fatalf("%s: append into %s: exit %d\n%s%s", groups, dst, r.code, r.stdout, r.stderr)
			}
		}
		sameOutput(t, storeTree(t, srv, "dst", "out"), localTree(t, local))
	}
	if r := bpS3(t, env, "verify", remote, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := bpS3(t, env, "convert-lerobot", src, remote, "--append", "--yes", "--json"); r.code != exitOK || lastJSON(t, r)["status"] != "already_done" {
		t.Fatalf("rerun: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// Command s3copy is the baseline of bench/s3.sh: it moves the files of a
// directory to an S3 prefix, or the objects of a prefix to a directory,
// with the AWS SDK's own transfer manager at a given part size and
// concurrency, so a bpconvert run to or from a bucket can be compared with
// the plain copy of the same bytes by the same library.
//
//	s3copy up DIR s3://BUCKET/PREFIX
//	s3copy down s3://BUCKET/PREFIX DIR
//	s3copy get s3://BUCKET/PREFIX DIR
//
// down uses the transfer manager's ranged, concurrent parts; get is the
// plainest download there is: one GetObject per object, its body streamed
// into the file, one object after another.
//
// Credentials and endpoint come from the environment, as for bpconvert.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

func main() {
	part := flag.Int64("part-size", 16<<20, "multipart part size in bytes")
	conc := flag.Int("concurrency", 8, "parts in flight")
	flag.Parse()
	if err := run(context.Background(), flag.Args(), *part, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "s3copy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, part int64, conc int) error {
	if len(args) != 3 || (args[0] != "up" && args[0] != "down" && args[0] != "get") {
		return fmt.Errorf("usage: s3copy up DIR s3://BUCKET/PREFIX | down|get s3://BUCKET/PREFIX DIR")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if o.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		o.Logger = logging.Nop{}
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes, o.Concurrency = part, conc
	})
	loc := args[2]
	if args[0] != "up" {
		loc = args[1]
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	prefix = strings.Trim(prefix, "/")
	if args[0] == "up" {
		return up(ctx, tm, args[1], bucket, prefix)
	}
	fetch := func(key *string) (io.ReadCloser, error) {
		out, err := tm.GetObject(ctx, &transfermanager.GetObjectInput{Bucket: aws.String(bucket), Key: key})
		if err != nil {
			return nil, err
		}
		return io.NopCloser(out.Body), nil
	}
	if args[0] == "get" {
		fetch = func(key *string) (io.ReadCloser, error) {
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key})
			if err != nil {
				return nil, err
			}
			return out.Body, nil
		}
	}
	return down(ctx, client, fetch, bucket, prefix, args[2])
}

func up(ctx context.Context, tm *transfermanager.Client, dir, bucket, prefix string) error {
	var files []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + filepath.ToSlash(rel)), Body: f,
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// down writes every object under prefix into dir, each read through fetch.
func down(ctx context.Context, client *s3.Client, fetch func(key *string) (io.ReadCloser, error), bucket, prefix, dir string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			rel := strings.TrimPrefix(aws.ToString(o.Key), prefix+"/")
			dst := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			body, err := fetch(o.Key)
			if err != nil {
				return err
			}
			f, err := os.Create(dst)
			if err != nil {
				body.Close()
				return err
			}
			_, err = io.Copy(f, body)
			body.Close()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", dst, err)
			}
		}
	}
	return nil
}

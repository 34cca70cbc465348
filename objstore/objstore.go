// Package objstore is where a dataset lives: a directory on this machine or
// a prefix in an S3 bucket, behind one small interface (Store) with one
// backend per kind. Readers take objects through ranged reads (Object is an
// io.ReaderAt); writers put whole objects, staged elsewhere first, so a put
// is all or nothing. Converters, pack readers and the staging code use
// Store and never an S3 client.
//
// It is not a file system: there are no directories, renames or appends,
// and names are slash-separated paths relative to the store's root.
package objstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// Store is a dataset location.
type Store interface {
	// Open opens the object name for reading. A missing object gives an
	// error matching ErrNotExist.
	Open(ctx context.Context, name string) (Object, error)
	// Stat returns an object's size (ErrNotExist when it is missing).
	Stat(ctx context.Context, name string) (Info, error)
	// List calls fn for every object whose name starts with prefix (names
	// relative to the root; "" lists everything), in byte order of name.
	List(ctx context.Context, prefix string, fn func(Info) error) error
	// Put writes the object name from the size bytes of r, whole or not
	// at all. With PutOptions.IfAbsent it fails with an error matching
	// ErrExists when the object exists, and no two puts can both succeed.
	Put(ctx context.Context, name string, r io.ReaderAt, size int64, o PutOptions) error
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, name string) error
	// Copy makes to a copy of the object from, inside the store, without
	// the bytes passing through this process where the backend can (a
	// server-side copy on S3, a hard link locally); the copy keeps the
	// recorded SHA256. A missing from gives an error matching ErrNotExist.
	Copy(ctx context.Context, from, to string) error
	// Location is the store's root as the user named it (an absolute path
	// or s3://BUCKET/PREFIX), never carrying a credential.
	Location() string
}

// Object is an open object: ranged reads at any offset, concurrently.
type Object interface {
	io.ReaderAt
	// Size is the object's length in bytes.
	Size() int64
	Close() error
}

// Info describes an object.
type Info struct {
	// Name is relative to the store's root, slash-separated.
	Name string
	Size int64
	// SHA256 is the hex digest recorded when bpconvert put the object
	// (PutOptions.SHA256), or "" when none is known (always from List).
	SHA256 string
	// ModTime is when the object was last written.
	ModTime time.Time
	// ETag is the store's tag of the object's content ("" locally).
	ETag string
}

// PutOptions shape a Put.
type PutOptions struct {
	// IfAbsent makes the put fail (ErrExists) when the object exists.
	IfAbsent bool
	// IfMatch, when not "", makes the put replace the object only while
	// its ETag is IfMatch (Info.ETag); otherwise it fails with an error
	// matching ErrChanged, and no two puts on the same ETag can both
	// succeed. Object storage only: a local store refuses it.
	IfMatch string
	// SHA256 is the hex digest of the bytes, recorded with the object
	// where the backend can (S3 metadata), for resumes to trust.
	SHA256 string
}

// ErrNotExist is matched by errors for a missing object or bucket.
var ErrNotExist = fs.ErrNotExist

// ErrNoBucket is matched by errors for a bucket that does not exist; such
// errors match ErrNotExist too.
var ErrNoBucket = &noBucket{}

type noBucket struct{}

func (*noBucket) Error() string        { return "bucket does not exist" }
func (*noBucket) Is(target error) bool { return target == ErrNotExist }

// ErrExists is matched by a Put with IfAbsent on an existing object.
var ErrExists = fs.ErrExist

// ErrUnavailable is matched by errors for a store that could not be
// reached or kept failing (refused or reset connections, 5xx answers)
// after every retry: a failure of the store, not of the data in it.
var ErrUnavailable = errors.New("the store could not be reached")

// ErrChanged is matched by errors for an object that was replaced while it
// was read: its later ranges are of another version than its first.
var ErrChanged = errors.New("it changed while it was read; rerun to convert the new version")

// ErrDenied is matched by errors for refused credentials or permissions.
var ErrDenied = errors.New("access denied")

// IsRemote reports whether loc names object storage (s3://) rather than a
// local path.
func IsRemote(loc string) bool { return strings.HasPrefix(loc, "s3://") }

// Options configure Open.
type Options struct {
	// PartSize is the size of a multipart upload's parts (S3); 0 means
	// DefaultPartSize.
	PartSize int64
	// Concurrency bounds the parts of one upload in flight; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Stats, when set, counts the requests and bytes moved.
	Stats *Stats
	// MaxCopySize is the largest object Copy copies with one request (S3);
	// larger ones are copied in parts of PartSize (at least 5 MiB). 0 means
	// MaxSingleCopy.
	MaxCopySize int64
	// Timeouts bound every request (S3); a zero bound is taken from the
	// environment (EnvTimeout, EnvConnectTimeout) or its default.
	Timeouts Timeouts
	// Endpoint, when set, is the S3 service's URL (http://HOST:PORT for a
	// server of one's own), used instead of AWS_ENDPOINT_URL_S3 or
	// AWS_ENDPOINT_URL, with path-style addressing.
	Endpoint string
	// Credentials, when their key ID is set, are used instead of those the
	// AWS configuration finds (environment, shared files, instance role).
	Credentials Credentials
	// Region, when set, is used instead of the configured one.
	Region string
	// MaxAttempts bounds the attempts of one request (S3); 0 means
	// AWS_MAX_ATTEMPTS from the environment, or 8.
	MaxAttempts int
}

// Credentials are an S3 access key, given as a value rather than found in
// the environment; they appear in no message.
type Credentials struct {
	// AccessKeyID and SecretAccessKey are the key pair; SessionToken is
	// set for temporary credentials.
	AccessKeyID, SecretAccessKey, SessionToken string
}

// MaxSingleCopy is the largest object S3 copies in one CopyObject request.
const MaxSingleCopy = 5 << 30

// DefaultPartSize is the part size of multipart uploads.
const DefaultPartSize = 16 << 20

// DefaultConcurrency is how many parts of one upload are sent at once.
const DefaultConcurrency = 4

// Open returns the store for loc: s3://BUCKET[/PREFIX] or a local
// directory path (which need not exist yet).
func Open(ctx context.Context, loc string, o Options) (Store, error) {
	if IsRemote(loc) {
		return openS3(ctx, loc, o)
	}
	return NewLocal(loc)
}

// Join joins slash-separated name parts, dropping empty ones.
func Join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		p = strings.Trim(p, "/")
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}

// ReadAll reads a whole object, refusing one larger than max bytes.
func ReadAll(ctx context.Context, s Store, name string, max int64) ([]byte, error) {
	obj, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	if obj.Size() > max {
		return nil, errors.New(name + ": larger than the limit for this file")
	}
	b := make([]byte, obj.Size())
	if _, err := obj.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return nil, err
	}
	return b, nil
}

// PutFile puts the local regular file at path into s under name, as its
// size is when opened (a FIFO is refused, not waited on).
func PutFile(ctx context.Context, s Store, name, path string) error {
	f, err := srcfile.OpenFile(path)
	if err != nil {
		return srcfile.Named("open", path, err)
	}
	defer f.Close()
	return s.Put(ctx, name, f, f.Size(), PutOptions{})
}

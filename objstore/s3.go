package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/bpconvert/bpconvert/internal/workpool"
)

// S3 is a store under a prefix of an S3 bucket (or of an S3-compatible
// server's). Credentials, region and endpoint come the way the AWS SDKs and
// CLI take them: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION, AWS_PROFILE), the shared config and
// credentials files, web identity and instance roles; AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL names an S3-compatible server, which is then
// addressed path-style (http://host/bucket/key).
type S3 struct {
	client      *s3.Client
	bucket      string
	prefix      string // "" or ending in "/"
	partSize    int64
	concurrency int
	maxCopy     int64
	stats       *Stats
	secrets     []string // credential strings that must never reach a message
	timeouts    Timeouts
	retryer     aws.Retryer
	// slow is the HTTP client of requests a server works on before it
	// answers (copies, completing an upload): SlowFactor times the bound.
	slow aws.HTTPClient
}

var _ Store = (*S3)(nil)

// metaSHA256 is the user metadata key under which Put records a digest.
const metaSHA256 = "bpconvert-sha256"

var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ErrBadLocation is matched by errors for an s3:// location that is not
// well formed: a bad bucket name, an empty, . or .. segment, or user
// information (a credential) before the bucket.
var ErrBadLocation = errors.New("not a valid s3:// location")

// userinfo finds the user information of s3:// locations in a text.
var userinfo = regexp.MustCompile(`(?i)(s3://)[^/\s"'@]*@`)

// RedactLocation returns text with the user information of every s3://
// location in it (s3://KEY:SECRET@bucket) replaced by [redacted]: a
// credential typed into a location never reaches a message.
func RedactLocation(text string) string {
	return userinfo.ReplaceAllString(text, "${1}[redacted]@")
}

// HasUserinfo reports whether text holds an s3:// location with user
// information before its bucket.
func HasUserinfo(text string) bool { return userinfo.MatchString(text) }

// ParseS3 splits s3://BUCKET/PREFIX into the bucket and the prefix (no
// leading or trailing slash). Errors match ErrBadLocation and never carry
// user information the location held.
func ParseS3(loc string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%s: %w", RedactLocation(loc), ErrBadLocation)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if strings.Contains(bucket, "@") {
		return "", "", fmt.Errorf("%s: %w: credentials do not belong in the location (give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)", RedactLocation(loc), ErrBadLocation)
	}
	if !bucketName.MatchString(bucket) || strings.Contains(bucket, "..") {
		return "", "", fmt.Errorf("%s: %w: %q is not a valid bucket name (3-63 characters: lower-case letters, digits, dots and hyphens)", loc, ErrBadLocation, bucket)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	for _, seg := range strings.Split(prefix, "/") {
		if prefix != "" && (seg == "" || seg == "." || seg == "..") {
			return "", "", fmt.Errorf("%s: %w: empty, . or .. segment in the prefix", loc, ErrBadLocation)
		}
	}
	return bucket, prefix, nil
}

func openS3(ctx context.Context, loc string, o Options) (*S3, error) {
	bucket, prefix, err := ParseS3(loc)
	if err != nil {
		return nil, err
	}
	tmo, err := o.Timeouts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx, configOptions(o, tmo)...)
	if err != nil {
		return nil, fmt.Errorf("s3://%s: loading the AWS configuration: %w: %s", bucket, ErrSetting, err)
	}
	st := &S3{bucket: bucket, partSize: o.PartSize, concurrency: o.Concurrency, stats: o.Stats, timeouts: tmo}
	if prefix != "" {
		st.prefix = prefix + "/"
	}
	if st.partSize <= 0 {
		st.partSize = DefaultPartSize
	}
	if st.partSize < 5<<20 {
		st.partSize = 5 << 20 // S3's smallest part
	}
	if st.concurrency <= 0 {
		st.concurrency = DefaultConcurrency
	}
	st.maxCopy = o.MaxCopySize
	if st.maxCopy <= 0 || st.maxCopy > MaxSingleCopy {
		st.maxCopy = MaxSingleCopy
	}
	st.client = s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.Logger = logging.Nop{}
		so.DisableLogOutputChecksumValidationSkipped = true
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		if so.BaseEndpoint != nil {
			so.UsePathStyle = true
		}
		if so.Region == "" {
			so.Region = "us-east-1"
		}
	})
	st.retryer = st.client.Options().Retryer
	st.slow = cfg.HTTPClient
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		st.slow = withTimeouts(bc, Timeouts{Connect: tmo.Connect, Idle: SlowFactor * tmo.Idle})
	}
	if cfg.Credentials != nil {
		if c, err := cfg.Credentials.Retrieve(ctx); err == nil {
			for _, s := range []string{c.AccessKeyID, c.SecretAccessKey, c.SessionToken} {
				if len(s) >= 4 {
					st.secrets = append(st.secrets, s)
				}
			}
		} else {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("s3://%s: %w", bucket, ctx.Err())
			}
			return nil, fmt.Errorf("s3://%s: %w: no usable AWS credentials (environment, shared config and credentials files, web identity, instance role): %s", bucket, ErrSetting, st.redact(err.Error()))
		}
	}
	return st, nil
}

// configOptions are the AWS configuration's settings for o: the request
// bounds, retries, and what o gives instead of the environment (region,
// credentials; the endpoint is set on the client, where the environment's
// would otherwise win).
func configOptions(o Options, tmo Timeouts) []func(*config.LoadOptions) error {
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 8
		if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("AWS_MAX_ATTEMPTS"))); err == nil && n > 0 {
			attempts = n
		}
	}
	opts := []func(*config.LoadOptions) error{
		// A library prints nothing: the SDK's log lines (an instance
		// role's "falling back to IMDSv1") go nowhere.
		config.WithLogger(logging.Nop{}),
		config.WithHTTPClient(newHTTPClient(tmo)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = attempts
				so.MaxBackoff = 10 * time.Second
				so.RateLimiter = ratelimit.None
				so.Retryables = append(so.Retryables, retry.IsErrorRetryableFunc(retryableAnswer))
			})
		}),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if c := o.Credentials; c.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	return opts
}

// retryableAnswer retries an answer that could not be read whole or
// understood (a body cut short, a listing that is not XML): a fault of the
// network or the store, like a reset.
func retryableAnswer(err error) aws.Ternary {
	var de *smithy.DeserializationError
	if errors.As(err, &de) || errors.Is(err, io.ErrUnexpectedEOF) {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// Location implements Store.
func (s *S3) Location() string {
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// Bucket is the store's bucket.
func (s *S3) Bucket() string { return s.bucket }

func (s *S3) key(name string) string { return s.prefix + name }

func (s *S3) url(name string) string { return "s3://" + s.bucket + "/" + s.key(name) }

func (s *S3) redact(msg string) string {
	for _, c := range s.secrets {
		msg = strings.ReplaceAll(msg, c, "[redacted]")
	}
	return msg
}

// transportTimeout reports whether err is a bound of the HTTP client
// passing (which also matches context.DeadlineExceeded), not the caller's
// deadline.
func transportTimeout(err error) bool {
	var se *StallError
	var ne *net.OpError
	return errors.As(err, &se) || (errors.As(err, &ne) && ne.Timeout()) ||
		strings.Contains(err.Error(), "timeout awaiting response headers") || strings.Contains(err.Error(), "TLS handshake timeout")
}

// unavailableText words a request that got no usable answer after every
// attempt: why, and how many attempts were made.
func (s *S3) unavailableText(err error, code string, status int) string {
	var ne *net.OpError
	var se *StallError
	var te interface{ Timeout() bool }
	var what string
	switch {
	case errors.As(err, &se):
		what = "the store stopped answering: " + se.Error()
	case errors.As(err, &te) && te.Timeout():
		what = s.timeoutText(err)
	case isDeserialization(err):
		what = "the store's answer could not be read"
		if status != 0 {
			what += fmt.Sprintf(" (HTTP %d)", status)
		}
	case errors.As(err, &ne):
		what = "cannot reach the store: " + ne.Err.Error()
	case code != "":
		what = "the store keeps failing: " + code
	default:
		what = fmt.Sprintf("the store keeps failing (HTTP %d)", status)
	}
	var re interface{ MaxAttempts() int }
	if errors.As(err, &re) {
		what += fmt.Sprintf(" (after %d attempts)", re.MaxAttempts())
	} else if m := sdkAttempts.FindStringSubmatch(err.Error()); m != nil {
		what += " (after " + m[1] + " attempts)"
	}
	return what
}

// sdkAttempts finds the attempts the SDK's retryer made in its error.
var sdkAttempts = regexp.MustCompile(`exceeded maximum number of attempts, (\d+)`)

// timeoutText words a request that timed out: connecting, or waiting for
// the answer.
func (s *S3) timeoutText(err error) string {
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Op == "dial" {
		return fmt.Sprintf("cannot connect to the store within %s (the bound is set by %s)", s.timeouts.Connect, EnvConnectTimeout)
	}
	return fmt.Sprintf("the store did not answer within %s (the bound is set by %s)", s.timeouts.Idle, EnvTimeout)
}

// isDeserialization reports whether err is an answer that could not be
// read whole or understood.
func isDeserialization(err error) bool {
	var de *smithy.DeserializationError
	return errors.As(err, &de)
}

// s3Error is an S3 failure worded for people: the object, the operation
// and the server's code and message, matching a sentinel where one fits.
type s3Error struct {
	msg  string
	kind error
}

func (e *s3Error) Error() string { return e.msg }
func (e *s3Error) Unwrap() error { return e.kind }

// fail turns an SDK error into an s3Error naming the object.
func (s *S3) fail(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !transportTimeout(err)) {
		return fmt.Errorf("%s: %s: %w", s.url(name), op, err)
	}
	code, text := "", ""
	var api smithy.APIError
	if errors.As(err, &api) {
		code, text = api.ErrorCode(), api.ErrorMessage()
	}
	status := 0
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var kind error
	what := ""
	switch {
	case code == "NoSuchBucket":
		kind, what = ErrNoBucket, "bucket "+s.bucket+" does not exist"
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "XAdminUserNotFound" || code == "InvalidToken" || code == "ExpiredToken":
		// XAdminUserNotFound is an unknown access key on versitygw.
		kind, what = ErrDenied, "the credentials were refused ("+code+")"
	case code == "AccessDenied" || (code == "" && status == http.StatusForbidden):
		kind, what = ErrDenied, "access denied"
	case code == "PreconditionFailed" || code == "ConditionalRequestConflict" || (code == "" && status == http.StatusPreconditionFailed):
		kind, what = ErrExists, "the object exists already"
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		kind, what = ErrNotExist, "no such object"
	case status == 0 || status >= 500 || isDeserialization(err):
		// No answer, or the server kept failing, after every retry.
		kind, what = ErrUnavailable, s.unavailableText(err, code, status)
	}
	var msg string
	switch {
	case what != "":
		msg = fmt.Sprintf("%s: %s: %s", s.url(name), op, what)
	case code != "":
		msg = fmt.Sprintf("%s: %s: %s: %s", s.url(name), op, code, text)
	default:
		msg = fmt.Sprintf("%s: %s: %v", s.url(name), op, err)
	}

	return &s3Error{msg: s.redact(msg), kind: kind}
}

// s3Object is an object of an S3 store, one version of it: the ETag it had
// when it was opened (or listed, or first read) is pinned, and every ranged
// read is conditional on it.
type s3Object struct {
	s    *S3
	ctx  context.Context
	name string
	size int64

	mu   sync.Mutex
	etag string // "" until known
}

func (o *s3Object) Size() int64  { return o.size }
func (o *s3Object) Close() error { return nil }

// pinned returns the ETag reads are conditional on, pinning got when none
// is yet.
func (o *s3Object) pinned(got string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.etag == "" {
		o.etag = got
	}
	return o.etag
}

// ReadAt reads len(p) bytes at off with a ranged GET, retried (within the
// retry budget) when the request or its body fails, stalls or comes short,
// or the answer is not the range asked for.
func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset", o.s.url(o.name))
	}
	if off >= o.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := min(int64(len(p)), o.size-off)
	if want == 0 {
		return 0, nil
	}
	attempts := max(o.s.retryer.MaxAttempts(), 1)
	for attempt := 1; ; attempt++ {
		err := o.readOnce(p[:want], off)
		if err == nil {
			break
		}
		var re *retryable
		if !errors.As(err, &re) {
			return 0, err
		}
		if o.ctx.Err() != nil {
			return 0, fmt.Errorf("%s: read: %w", o.s.url(o.name), o.ctx.Err())
		}
		if attempt >= attempts {
			return 0, o.s.failRead(o.name, off, re.err, attempts)
		}
		delay, derr := o.s.retryer.RetryDelay(attempt, re.err)
		if derr != nil {
			delay = time.Second
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-o.ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("%s: read: %w", o.s.url(o.name), o.ctx.Err())
		}
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// retryable marks an error of one attempt that another may not meet.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }

// readOnce is one attempt of ReadAt: p filled from off, or an error, of
// type *retryable when another attempt may succeed.
func (o *s3Object) readOnce(p []byte, off int64) error {
	want := int64(len(p))
	in := &s3.GetObjectInput{
		Bucket: &o.s.bucket,
		Key:    aws.String(o.s.key(o.name)),
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+want-1)),
	}
	if etag := o.pinned(""); etag != "" {
		in.IfMatch = aws.String(etag)
	}
	o.s.stats.request()
	// One attempt per call: this loop retries, body reads included.
	out, err := o.s.client.GetObject(o.ctx, in, func(so *s3.Options) { so.RetryMaxAttempts = 1 })
	if err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("%s: %w", o.s.url(o.name), ErrChanged)
		}
		if o.s.retryer.IsErrorRetryable(err) {
			return &retryable{err: err}
		}
		return o.s.fail("read", o.name, err)
	}
	defer out.Body.Close()
	if err := o.checkAnswer(out, off, want); err != nil {
		return &retryable{err: err}
	}
	if out.ContentRange == nil && off > 0 {
		// The whole object came (the server ignored the range): the bytes
		// before the range are passed over.
		if _, err := io.CopyN(io.Discard, out.Body, off); err != nil {
			return &retryable{err: fmt.Errorf("read at %d: %w", off, bodyError(err))}
		}
	}
	n, err := io.ReadFull(out.Body, p)
	o.s.stats.addRead(int64(n))
	if err != nil {
		return &retryable{err: fmt.Errorf("read at %d: %w", off, bodyError(err))}
	}
	return nil
}

// bodyError words a body that ended early.
func bodyError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("the answer ended before the bytes it announced")
	}
	return err
}

// checkAnswer checks that an answer is the range asked for, of the pinned
// version (pinning the answer's when none is yet): a Content-Range of
// [off, off+want) of an object of the size opened, as many bytes, the
// ETag; or, for a server that ignores ranges, the whole object.
func (o *s3Object) checkAnswer(out *s3.GetObjectOutput, off, want int64) error {
	got := aws.ToString(out.ETag)
	if pin := o.pinned(got); got != "" && !sameETag(pin, got) {
		return fmt.Errorf("the answer is of another version (ETag %s, not %s): %w", got, pin, ErrChanged)
	}
	length := aws.ToInt64(out.ContentLength)
	if out.ContentRange == nil {
		if out.ContentLength != nil && length != o.size {
			return fmt.Errorf("asked for bytes %d-%d, the answer holds %d bytes and no Content-Range, the object %d", off, off+want-1, length, o.size)
		}
		return nil
	}
	var start, end, total int64
	cr := aws.ToString(out.ContentRange)
	if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &start, &end, &total); err != nil {
		return fmt.Errorf("asked for bytes %d-%d, the answer's Content-Range is %q", off, off+want-1, cr)
	}
	if start != off || end != off+want-1 || total != o.size || (out.ContentLength != nil && length != want) {
		return fmt.Errorf("asked for bytes %d-%d of %d, the answer holds bytes %d-%d of %d (%d bytes)", off, off+want-1, o.size, start, end, total, length)
	}
	return nil
}

// sameETag compares two ETags, quoted or not.
func sameETag(a, b string) bool {
	return strings.Trim(strings.TrimPrefix(a, "W/"), `"`) == strings.Trim(strings.TrimPrefix(b, "W/"), `"`)
}

// isPrecondition reports a 412 answer: a condition (If-Match) failed.
func isPrecondition(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "PreconditionFailed") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed
}

// failRead is the error of a read whose every attempt failed.
func (s *S3) failRead(name string, off int64, err error, attempts int) error {
	if errors.Is(err, ErrChanged) {
		return fmt.Errorf("%s: read at %d: %s (after %d attempts): %w", s.url(name), off, s.redact(err.Error()), attempts, ErrChanged)
	}
	var api smithy.APIError
	var hs interface{ HTTPStatusCode() int }
	if errors.As(err, &api) || errors.As(err, &hs) {
		e := s.fail("read", name, err)
		var se *s3Error
		if errors.As(e, &se) && se.kind == ErrUnavailable {
			// Each request was one attempt of this loop's.
			se.msg = strings.TrimSuffix(se.msg, " (after 1 attempts)")
			se.msg += fmt.Sprintf(" (after %d attempts)", attempts)
		}
		return e
	}
	what := err.Error()
	var st *StallError
	var te interface{ Timeout() bool }
	switch {
	case errors.As(err, &st):
		what = "the store stopped answering: " + st.Error()
	case errors.As(err, &te) && te.Timeout():
		what = s.timeoutText(err)
	}
	return &s3Error{msg: s.redact(fmt.Sprintf("%s: read at %d: %s (after %d attempts)", s.url(name), off, what, attempts)), kind: ErrUnavailable}
}

// Open implements Store: one HEAD request; reads are ranged GETs.
func (s *S3) Open(ctx context.Context, name string) (Object, error) {
	info, err := s.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return &s3Object{s: s, ctx: ctx, name: name, size: info.Size, etag: info.ETag}, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, name string) (Info, error) {
	s.stats.request()
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
	if err != nil {
		err = s.fail("stat", name, err)
		if errors.Is(err, ErrNotExist) {
			// A HEAD answer has no body to tell a missing object from a
			// missing bucket or an unknown key: a listing's answer does.
			if _, lerr := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.key(name)), MaxKeys: aws.Int32(1)}); lerr != nil {
				return Info{}, s.fail("stat", name, lerr)
			}
		}
		return Info{}, err
	}
	return Info{Name: name, Size: aws.ToInt64(out.ContentLength), SHA256: out.Metadata[metaSHA256],
		ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag)}, nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string, fn func(Info) error) error {
	in := &s3.ListObjectsV2Input{
		Bucket: &s.bucket,
		Prefix: aws.String(s.key(prefix)),
	}
	var infos []Info
	for {
		page, err := s.listPage(ctx, in)
		if err != nil {
			return s.fail("list", prefix, err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			infos = append(infos, Info{Name: name, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified), ETag: aws.ToString(o.ETag)})
		}
		if !aws.ToBool(page.IsTruncated) || aws.ToString(page.NextContinuationToken) == "" {
			break
		}
		in.ContinuationToken = page.NextContinuationToken
	}
	// ListObjectsV2 returns keys in UTF-8 byte order; sorted again in case
	// a server does not.
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for _, in := range infos {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

// errNotListing is an answer to a listing that is not one (an HTML page
// of a proxy, say): well-formed enough to parse, but naming no bucket.
var errNotListing = &smithy.DeserializationError{Err: errors.New("the answer is not a ListBucketResult")}

// listPage sends one ListObjectsV2 request, retried (within the attempts)
// when the answer, parsed, is not a listing at all: the SDK reads any
// XML, or HTML, as an empty page.
func (s *S3) listPage(ctx context.Context, in *s3.ListObjectsV2Input) (*s3.ListObjectsV2Output, error) {
	attempts := max(s.retryer.MaxAttempts(), 1)
	for attempt := 1; ; attempt++ {
		s.stats.request()
		page, err := s.client.ListObjectsV2(ctx, in)
		if err != nil || page.Name != nil {
			return page, err
		}
		if attempt >= attempts {
			return nil, fmt.Errorf("%w (after %d attempts)", errNotListing, attempts)
		}
		delay, derr := s.retryer.RetryDelay(attempt, errNotListing)
		if derr != nil {
			delay = time.Second
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// Put implements Store: one PUT up to the part size, a multipart upload of
// concurrent parts above it (aborted on failure). The stored size is
// checked afterwards; each request's payload carries a checksum the server
// checks.
func (s *S3) Put(ctx context.Context, name string, r io.ReaderAt, size int64, o PutOptions) error {
	var meta map[string]string
	if o.SHA256 != "" {
		meta = map[string]string{metaSHA256: o.SHA256}
	}
	if size <= s.partSize || o.IfAbsent || o.IfMatch != "" {
		in := &s3.PutObjectInput{
			Bucket:        &s.bucket,
			Key:           aws.String(s.key(name)),
			Body:          io.NewSectionReader(r, 0, size),
			ContentLength: aws.Int64(size),
			Metadata:      meta,
		}
		if o.IfAbsent {
			in.IfNoneMatch = aws.String("*")
		}
		if o.IfMatch != "" {
			in.IfMatch = aws.String(o.IfMatch)
		}
		s.stats.request()
		if _, err := s.client.PutObject(ctx, in); err != nil {
			if o.IfMatch != "" && isPrecondition(err) {
				return fmt.Errorf("%s: %w", s.url(name), ErrChanged)
			}
			return s.fail("put", name, err)
		}
		s.stats.addWritten(size)
	} else if err := s.putMultipart(ctx, name, r, size, meta); err != nil {
		return err
	}
	info, err := s.Stat(ctx, name)
	if err != nil {
		return err
	}
	if info.Size != size {
		return fmt.Errorf("%s: the store holds %d bytes after an upload of %d", s.url(name), info.Size, size)
	}
	return nil
}

func (s *S3) putMultipart(ctx context.Context, name string, r io.ReaderAt, size int64, meta map[string]string) error {
	key := s.key(name)
	s.stats.request()
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key, Metadata: meta,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		return s.fail("upload", name, err)
	}
	done := false
	defer func() {
		if !done {
			s.abortUpload(key, up.UploadId)
		}
	}()
	nparts := int((size + s.partSize - 1) / s.partSize)
	parts := make([]types.CompletedPart, nparts)
	err = workpool.Run(ctx, nparts, s.concurrency, func(ctx context.Context, i int) error {
		off := int64(i) * s.partSize
		n := min(s.partSize, size-off)
		num := int32(i + 1)
		s.stats.request()
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &s.bucket, Key: &key, UploadId: up.UploadId, PartNumber: &num,
			Body: io.NewSectionReader(r, off, n), ContentLength: aws.Int64(n),
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
		if err != nil {
			return s.fail(fmt.Sprintf("upload part %d of %d", num, nparts), name, err)
		}
		s.stats.addWritten(n)
		parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: &num,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
			ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256, ChecksumCRC64NVME: out.ChecksumCRC64NVME}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: upload: %w", s.url(name), err)
	}
	s.stats.request()
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}, s.slowly); err != nil {
		return s.fail("complete upload", name, err)
	}
	done = true
	return nil
}

// slowly sends a request through the client with the longer bound.
func (s *S3) slowly(o *s3.Options) { o.HTTPClient = s.slow }

// abortUpload abandons a multipart upload, with a context of its own: the
// caller's may be what was cancelled.
func (s *S3) abortUpload(key string, id *string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s.stats.request()
	s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: id}) //nolint:errcheck // best effort; AbortUploads clears what is left
}

// AbortUploads abandons every multipart upload in progress under prefix
// (those of a killed run) and returns how many it abandoned.
func (s *S3) AbortUploads(ctx context.Context, prefix string) (int, error) {
	n := 0
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.key(prefix))}
	for {
		s.stats.request()
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return n, s.fail("list uploads", prefix, err)
		}
		for _, u := range out.Uploads {
			s.stats.request()
			if _, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId}); err != nil {
				return n, s.fail("abort upload", strings.TrimPrefix(aws.ToString(u.Key), s.prefix), err)
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, name string) error {
	s.stats.request()
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(name))})
	if err != nil {
		if err := s.fail("delete", name, err); errors.Is(err, ErrNotExist) && !errors.Is(err, ErrNoBucket) {
			return nil
		}
		return s.fail("delete", name, err)
	}
	return nil
}

// copySource is the CopySource of an object of this store: the bucket and
// the key, each path segment URL-encoded.
func (s *S3) copySource(name string) string {
	segs := strings.Split(s.key(name), "/")
	for i, g := range segs {
		segs[i] = url.PathEscape(g)
	}
	return s.bucket + "/" + strings.Join(segs, "/")
}

// Copy implements Store: a server-side CopyObject up to MaxCopySize, an
// UploadPartCopy of concurrent parts above it (aborted on failure); the
// bytes never pass through this process. The user metadata (the recorded
// SHA256) is kept, and the copy's size is checked afterwards.
func (s *S3) Copy(ctx context.Context, from, to string) error {
	src, err := s.Stat(ctx, from)
	if err != nil {
		return err
	}
	if src.Size <= s.maxCopy {
		s.stats.request()
		if _, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket: &s.bucket, Key: aws.String(s.key(to)), CopySource: aws.String(s.copySource(from)),
		}, s.slowly); err != nil {
			return s.fail("copy from "+s.url(from)+" to", to, err)
		}
	} else if err := s.copyParts(ctx, from, to, src); err != nil {
		return err
	}
	got, err := s.Stat(ctx, to)
	if err != nil {
		return err
	}
	if got.Size != src.Size {
		return fmt.Errorf("%s: the store holds %d bytes after a copy of %d from %s", s.url(to), got.Size, src.Size, s.url(from))
	}
	return nil
}

// copyParts is Copy for an object larger than one CopyObject may copy.
func (s *S3) copyParts(ctx context.Context, from, to string, src Info) error {
	key := s.key(to)
	var meta map[string]string
	if src.SHA256 != "" {
		meta = map[string]string{metaSHA256: src.SHA256}
	}
	s.stats.request()
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &key, Metadata: meta})
	if err != nil {
		return s.fail("copy", to, err)
	}
	done := false
	defer func() {
		if !done {
			s.abortUpload(key, up.UploadId)
		}
	}()
	nparts := int((src.Size + s.partSize - 1) / s.partSize)
	parts := make([]types.CompletedPart, nparts)
	err = workpool.Run(ctx, nparts, s.concurrency, func(ctx context.Context, i int) error {
		off := int64(i) * s.partSize
		n := min(s.partSize, src.Size-off)
		num := int32(i + 1)
		s.stats.request()
		out, err := s.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
			Bucket: &s.bucket, Key: &key, UploadId: up.UploadId, PartNumber: &num,
			CopySource:      aws.String(s.copySource(from)),
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
		}, s.slowly)
		if err != nil {
			return s.fail(fmt.Sprintf("copy part %d of %d", num, nparts), to, err)
		}
		parts[i] = types.CompletedPart{PartNumber: &num}
		if out.CopyPartResult != nil {
			parts[i].ETag = out.CopyPartResult.ETag
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: copy: %w", s.url(to), err)
	}
	s.stats.request()
	if _, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}, s.slowly); err != nil {
		return s.fail("complete copy", to, err)
	}
	done = true
	return nil
}

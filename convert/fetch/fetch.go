// Package fetch fetches the files that remote media cells name (a
// Hugging Face media value whose bytes are null and whose path is an
// https://, hf:// or s3:// URL) so that a converter can pack them. Every
// fetch is bounded in size and time and retried; credentials come from the
// environment as for s3:// sources and never appear in an error. It is not
// a general download client: it reads whole files of bounded size into
// memory.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bpconvert/bpconvert/objstore"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 256 << 20
	DefaultTimeout  = 60 * time.Second
	DefaultAttempts = 4
	// DefaultHFEndpoint is where hf:// paths are fetched from unless
	// HF_ENDPOINT names another.
	DefaultHFEndpoint = "https://huggingface.co"

	// EnvTimeout sets Options.Timeout when it is 0: a Go duration ("45s")
	// or a number of seconds.
	EnvTimeout = "BPCONVERT_FETCH_TIMEOUT"
	// EnvMaxBytes sets Options.MaxBytes when it is 0: a number of bytes.
	EnvMaxBytes = "BPCONVERT_FETCH_MAX_BYTES"
)

// ErrNotFound is matched by errors for a URL whose server says it does not
// exist or may not be read (an HTTP 4xx answer, a missing object): a fault
// of the data, which a retry does not mend.
var ErrNotFound = errors.New("not found")

// ErrTooLarge is matched by errors for a file larger than Options.MaxBytes.
var ErrTooLarge = errors.New("larger than the limit for a fetched file")

// ErrUnsupported is matched by errors for a URL of a scheme this package
// does not fetch.
var ErrUnsupported = errors.New("not a URL this converter fetches (https://, http://, hf://, s3://)")

// Options bound and direct fetches; the zero value takes the defaults.
type Options struct {
	// MaxBytes is the largest file fetched; 0 means EnvMaxBytes, else
	// DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds one attempt of an HTTP fetch, body included; 0
	// means EnvTimeout, else DefaultTimeout. s3:// fetches take object storage's own
	// bounds (objstore.Timeouts).
	Timeout time.Duration
	// Attempts is how many times an HTTP fetch is tried in all before it
	// fails (refused or reset connections, timeouts, 5xx and 429
	// answers); 0 means DefaultAttempts.
	Attempts int
	// HFEndpoint is where hf:// paths are fetched from; "" means
	// HF_ENDPOINT, else DefaultHFEndpoint. HF_TOKEN, when set, is sent to
	// it (and only to it) as a bearer token.
	HFEndpoint string
	// S3 configures the stores of s3:// URLs (credentials, region and
	// endpoint come from the environment, as for s3:// sources).
	S3 objstore.Options
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Fetcher fetches remote files; it is safe for concurrent use.
type Fetcher struct {
	o      Options
	client *http.Client
	mu     sync.Mutex
	stores map[string]objstore.Store // by bucket
}

// New returns a Fetcher with options o, or an error for a malformed
// EnvTimeout or EnvMaxBytes.
func New(o Options) (*Fetcher, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if v := strings.TrimSpace(o.Getenv(EnvMaxBytes)); o.MaxBytes <= 0 && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s=%q: want a number of bytes", EnvMaxBytes, v)
		}
		o.MaxBytes = n
	}
	if v := strings.TrimSpace(o.Getenv(EnvTimeout)); o.Timeout <= 0 && v != "" {
		d, err := time.ParseDuration(v)
		if n, nerr := strconv.ParseFloat(v, 64); nerr == nil {
			d, err = time.Duration(n*float64(time.Second)), nil
		}
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: want a duration such as 30s or 2m, or seconds", EnvTimeout, v)
		}
		o.Timeout = d
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.HFEndpoint == "" {
		o.HFEndpoint = o.Getenv("HF_ENDPOINT")
	}
	if o.HFEndpoint == "" {
		o.HFEndpoint = DefaultHFEndpoint
	}
	o.HFEndpoint = strings.TrimRight(o.HFEndpoint, "/")
	return &Fetcher{o: o, client: &http.Client{}, stores: map[string]objstore.Store{}}, nil
}

// Fetch returns the bytes of the file raw names.
func (f *Fetcher) Fetch(ctx context.Context, raw string) ([]byte, error) {
	b, err := f.fetch(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", Redact(raw), err)
	}
	return b, nil
}

func (f *Fetcher) fetch(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, ErrUnsupported
	}
	switch u.Scheme {
	case "http", "https":
		return f.fetchHTTP(ctx, u.String(), false)
	case "hf":
		target, err := f.hfURL(u)
		if err != nil {
			return nil, err
		}
		return f.fetchHTTP(ctx, target, true)
	case "s3":
		return f.fetchS3(ctx, u)
	}
	return nil, ErrUnsupported
}

// hfURL maps hf://datasets/OWNER/NAME[@REVISION]/PATH (and models/,
// spaces/) to the endpoint's resolve URL of PATH at REVISION (main when
// none is given).
func (f *Fetcher) hfURL(u *url.URL) (string, error) {
	p := strings.TrimPrefix(u.Host+u.EscapedPath(), "/") // a revision may hold an escaped slash
	parts := strings.SplitN(p, "/", 4)
	if len(parts) < 4 || (parts[0] != "datasets" && parts[0] != "models" && parts[0] != "spaces") {
		return "", fmt.Errorf("%w: an hf:// path is hf://datasets/OWNER/NAME[@REVISION]/PATH", ErrUnsupported)
	}
	kind, owner, name, file := parts[0], parts[1], parts[2], parts[3]
	rev := "main"
	if i := strings.IndexByte(name, '@'); i >= 0 {
		r, err := url.PathUnescape(name[i+1:])
		if err != nil {
			return "", fmt.Errorf("%w: revision %q", ErrUnsupported, name[i+1:])
		}
		name, rev = name[:i], r
	}
	if owner == "" || name == "" || rev == "" || file == "" {
		return "", fmt.Errorf("%w: an hf:// path is hf://datasets/OWNER/NAME[@REVISION]/PATH", ErrUnsupported)
	}
	prefix := "/" + kind
	if kind == "models" {
		prefix = ""
	}
	return f.o.HFEndpoint + prefix + "/" + owner + "/" + name + "/resolve/" + url.PathEscape(rev) + "/" + file, nil
}

// fetchHTTP gets target, retrying failures a retry may mend; hf says
// whether the Hugging Face token goes with it.
func (f *Fetcher) fetchHTTP(ctx context.Context, target string, hf bool) ([]byte, error) {
	var last error
	for attempt := 0; attempt < f.o.Attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff(attempt))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		b, retry, err := f.getOnce(ctx, target, hf)
		if err == nil {
			return b, nil
		}
		if !retry || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("%w: %d attempts, the last: %v", objstore.ErrUnavailable, f.o.Attempts, last)
}

// backoff is the pause before attempt n (1, 2, ...): 200 ms doubled each
// time, at most 5 s.
func backoff(n int) time.Duration {
	return min(200*time.Millisecond<<(n-1), 5*time.Second)
}

// getOnce makes one attempt; retry says whether another may succeed.
func (f *Fetcher) getOnce(ctx context.Context, target string, hf bool) (b []byte, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, false, ErrUnsupported
	}
	if tok := f.o.Getenv("HF_TOKEN"); hf && tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, true, errors.New(cause(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, true, fmt.Errorf("HTTP %s", resp.Status)
	default:
		return nil, false, fmt.Errorf("%w: HTTP %s", ErrNotFound, resp.Status)
	}
	if resp.ContentLength > f.o.MaxBytes {
		return nil, false, fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, resp.ContentLength, f.o.MaxBytes)
	}
	b, err = io.ReadAll(io.LimitReader(resp.Body, f.o.MaxBytes+1))
	if err != nil {
		return nil, true, errors.New(cause(err))
	}
	if int64(len(b)) > f.o.MaxBytes {
		return nil, false, fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, f.o.MaxBytes)
	}
	if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
		return nil, true, fmt.Errorf("%d bytes of %d", len(b), resp.ContentLength)
	}
	return b, false, nil
}

// fetchS3 reads s3://BUCKET/KEY through object storage (its retries and
// bounds, the credentials s3:// sources use).
func (f *Fetcher) fetchS3(ctx context.Context, u *url.URL) ([]byte, error) {
	bucket, key := u.Host, strings.TrimPrefix(u.Path, "/")
	if bucket == "" || key == "" {
		return nil, fmt.Errorf("%w: an s3:// path is s3://BUCKET/KEY", ErrUnsupported)
	}
	st, err := f.store(ctx, bucket)
	if err != nil {
		return nil, err
	}
	b, err := objstore.ReadAll(ctx, st, key, f.o.MaxBytes)
	if errors.Is(err, objstore.ErrNotExist) || errors.Is(err, objstore.ErrDenied) {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if err != nil && strings.Contains(err.Error(), "larger than the limit") {
		return nil, fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, f.o.MaxBytes)
	}
	return b, err
}

func (f *Fetcher) store(ctx context.Context, bucket string) (objstore.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.stores[bucket]; ok {
		return st, nil
	}
	st, err := objstore.Open(ctx, "s3://"+bucket, f.o.S3)
	if err != nil {
		return nil, err
	}
	f.stores[bucket] = st
	return st, nil
}

// Redact returns raw as an error may show it: without user information
// and without its query (where presigned URLs carry their signatures).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return objstore.RedactLocation(raw)
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.Fragment = ""
	return u.String()
}

// cause is the text of an error of the HTTP client without the URL it
// names (Fetch names it, redacted).
func cause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

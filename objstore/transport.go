package objstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Timeouts bound every request to object storage, so that a peer that
// stops answering is noticed and the request retried rather than waited
// on for ever.
type Timeouts struct {
	// Connect bounds opening a connection (and its TLS handshake).
	Connect time.Duration
	// Idle bounds the wait for the first byte of an answer once a request
	// is sent, and any pause of a transfer in progress in either direction
	// (a body that stops arriving, an upload the server stops reading).
	Idle time.Duration
}

// Default bounds, and the environment variables that change them.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 30 * time.Second

	// EnvTimeout sets Timeouts.Idle: the first-byte and idle bound.
	EnvTimeout = "BPCONVERT_S3_TIMEOUT"
	// EnvConnectTimeout sets Timeouts.Connect.
	EnvConnectTimeout = "BPCONVERT_S3_CONNECT_TIMEOUT"

	// SlowFactor multiplies Timeouts.Idle for the answer of a request
	// the server works on before it answers: a server-side copy, the
	// completion of a multipart upload.
	SlowFactor = 10
)

// ErrSetting is matched by errors for a setting of object storage that
// cannot be used: a malformed bound, missing or unloadable credentials, a
// profile that does not exist.
var ErrSetting = errors.New("unusable object storage setting")

// TimeoutsFromEnv reads the bounds from the environment (getenv, such as
// os.Getenv): a Go duration ("45s", "2m") or a number of seconds; unset
// means the default.
func TimeoutsFromEnv(getenv func(string) string) (Timeouts, error) {
	t := Timeouts{Connect: DefaultConnectTimeout, Idle: DefaultIdleTimeout}
	for _, v := range []struct {
		name string
		d    *time.Duration
	}{{EnvConnectTimeout, &t.Connect}, {EnvTimeout, &t.Idle}} {
		s := strings.TrimSpace(getenv(v.name))
		if s == "" {
			continue
		}
		d, err := parseSeconds(s)
		if err != nil {
			return Timeouts{}, fmt.Errorf("%s=%q: %w: want a duration such as 30s or 2m, or seconds", v.name, s, ErrSetting)
		}
		*v.d = d
	}
	return t, nil
}

// parseSeconds reads a positive duration: a Go duration or seconds.
func parseSeconds(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, err
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 || d > 24*time.Hour {
		return 0, errors.New("out of range")
	}
	return d, nil
}

// withDefaults fills the bounds left zero from the environment.
func (t Timeouts) withDefaults() (Timeouts, error) {
	env, err := TimeoutsFromEnv(os.Getenv)
	if err != nil {
		return Timeouts{}, err
	}
	if t.Connect <= 0 {
		t.Connect = env.Connect
	}
	if t.Idle <= 0 {
		t.Idle = env.Idle
	}
	return t, nil
}

// newHTTPClient is the HTTP client every request of an S3 store goes
// through: connections open within t.Connect, an answer's headers must
// start within t.Idle of the request being sent, and a connection that
// moves no byte either way for t.Idle while a request uses it fails. The
// failures are timeouts, which the retryer retries like resets.
func newHTTPClient(t Timeouts) *awshttp.BuildableClient {
	return withTimeouts(awshttp.NewBuildableClient(), t)
}

// withTimeouts is b (its TLS settings kept: a CA bundle the configuration
// added) with the bounds of t.
func withTimeouts(b *awshttp.BuildableClient, t Timeouts) *awshttp.BuildableClient {
	dialer := &net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}
	// The SDK's own read timeout is off: idleConn bounds both directions.
	return b.WithReadTimeout(0).WithTransportOptions(func(tr *http.Transport) {
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: t.Idle}, nil
		}
		tr.TLSHandshakeTimeout = t.Connect
		tr.ResponseHeaderTimeout = t.Idle
	})
}

// idleConn is a connection that fails a read or write once no byte has
// moved either way for idle: each byte read or written pushes the deadline
// of both directions on, so an upload in progress keeps the read of its
// answer waiting, and a body arriving keeps the connection alive. A
// connection resting in the pool between requests is closed when its
// deadline passes, which the transport handles as a closed connection.
type idleConn struct {
	net.Conn
	idle time.Duration

	mu   sync.Mutex
	last time.Time // when the deadline was last pushed on
}

// progress pushes the deadline on, at most every idle/16 (a deadline a
// little early is harmless; a timer reset per small read is not free).
func (c *idleConn) progress() {
	now := time.Now()
	c.mu.Lock()
	push := now.Sub(c.last) >= c.idle/16
	if push {
		c.last = now
	}
	c.mu.Unlock()
	if push {
		c.Conn.SetDeadline(now.Add(c.idle)) //nolint:errcheck // a closed connection fails its next read anyway
	}
}

func (c *idleConn) Read(p []byte) (int, error) {
	c.progress()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.progress()
	}
	return n, stallError(err, c.idle)
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.progress()
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.progress()
	}
	return n, stallError(err, c.idle)
}

// stallError words a passed deadline as the stall it is.
func stallError(err error, idle time.Duration) error {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return &StallError{Idle: idle, err: err}
	}
	return err
}

// StallError is a connection on which nothing moved for Idle.
type StallError struct {
	Idle time.Duration
	err  error
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no answer for %s (the bound is set by %s)", e.Idle, EnvTimeout)
}

// Unwrap returns the deadline's error.
func (e *StallError) Unwrap() error { return e.err }

// Timeout reports true: a stall is a timeout, retried like a reset.
func (e *StallError) Timeout() bool { return true }

// Temporary reports true, for retryers that ask.
func (e *StallError) Temporary() bool { return true }

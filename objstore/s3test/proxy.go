package s3test

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Fault is what a Proxy does to one request.
type Fault int

const (
	// Pass forwards the request.
	Pass Fault = iota
	// SlowDown answers 503 SlowDown, as S3 does when throttling.
	SlowDown
	// Reset closes the connection without an answer.
	Reset
	// StallHeaders sends nothing back (and reads no body): a peer that
	// went silent. The request is held until the client gives up.
	StallHeaders
	// StallBody passes the request on and sends the answer's headers and
	// the first half of its body, then nothing more.
	StallBody
	// ResetBody sends the headers and half the body, then resets the
	// connection.
	ResetBody
	// Truncate sends the headers (announcing the whole length) and half
	// the body, then closes the connection in order.
	Truncate
	// IgnoreRange passes the request on without its Range header, so the
	// whole object is answered (200), as a server that ignores ranges does.
	IgnoreRange
	// Swap answers with the same range of another object (SetSwap), with
	// that object's headers and ETag, as a confused cache would.
	Swap
	// GarbageXML answers 200 with a body that is not XML.
	GarbageXML
	// LoseAnswer passes the request on, so the server acts on it, then
	// resets the connection instead of answering.
	LoseAnswer
)

// maxStall bounds how long a stalled request is held (the client is
// expected to give up well before).
const maxStall = 2 * time.Minute

// Proxy sits between a client and a Server on its own loopback port and
// injects faults: answers of 503 SlowDown, connection resets, a delay per
// request, or refusing every connection (as a stopped server does).
type Proxy struct {
	// Endpoint is http://127.0.0.1:PORT of the proxy.
	Endpoint string

	mu       sync.Mutex
	decide   func(n int, r *http.Request) Fault
	delay    time.Duration
	swap     func(path string) string
	closed   chan struct{}
	server   *Server
	requests atomic.Int64
	faults   atomic.Int64
	sent     atomic.Int64
	srv      *http.Server
	ln       net.Listener
}

// NewProxy starts a proxy to s for the rest of the test.
func NewProxy(t testing.TB, s *Server) *Proxy {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Endpoint: "http://" + ln.Addr().String(), ln: ln, closed: make(chan struct{}), server: s}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a stopped server's refusals are expected
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(p.requests.Add(1))
		p.mu.Lock()
		decide, delay := p.decide, p.delay
		p.mu.Unlock()
		if delay > 0 {
			time.Sleep(delay)
		}
		f := Pass
		if decide != nil {
			f = decide(n, r)
		}
		if p.serveFault(f, w, r, rp) {
			return
		}
		switch f {
		case SlowDown:
			p.faults.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
			return
		case Reset:
			p.faults.Add(1)
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0) // a reset, not an orderly close
					}
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(&countingWriter{ResponseWriter: w, n: &p.sent}, r)
	})}
	go p.srv.Serve(ln)
	t.Cleanup(func() { close(p.closed); p.srv.Close() })
	return p
}

// serveFault serves the faults beyond SlowDown and Reset, reporting
// whether f was one of them.
func (p *Proxy) serveFault(f Fault, w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) bool {
	switch f {
	case StallHeaders:
		p.faults.Add(1)
		p.hold(r)
		panic(http.ErrAbortHandler)
	case StallBody, ResetBody, Truncate:
		p.faults.Add(1)
		rp.ServeHTTP(&cutWriter{ResponseWriter: w, p: p, r: r, fault: f}, r)
	case IgnoreRange:
		// The request is signed with its Range: the proxy asks for the
		// whole object itself.
		p.faults.Add(1)
		p.getAs(w, r, r.URL.Path, false)
	case Swap:
		p.mu.Lock()
		swap := p.swap
		p.mu.Unlock()
		if swap == nil {
			return false
		}
		p.faults.Add(1)
		// The other object's range and headers, as a cache keyed wrongly
		// gives, fetched by the proxy (the request is signed for its path).
		p.getAs(w, r, swap(r.URL.Path), true)
	case GarbageXML:
		p.faults.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("<html><body>502 Bad Gateway</body></html> not XML\n"))
	case LoseAnswer:
		p.faults.Add(1)
		rp.ServeHTTP(&lostWriter{header: http.Header{}}, r)
		resetConn(w)
	default:
		return false
	}
	return true
}

// getAs answers r with the object at path (/BUCKET/KEY) as the server
// gives it to the proxy's own request: with r's Range when withRange, the
// whole object otherwise.
func (p *Proxy) getAs(w http.ResponseWriter, r *http.Request, path string, withRange bool) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if rg := r.Header.Get("Range"); withRange && rg != "" {
		in.Range = aws.String(rg)
	}
	out, err := p.server.Client().GetObject(r.Context(), in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer out.Body.Close()
	h := w.Header()
	h.Set("ETag", aws.ToString(out.ETag))
	h.Set("Content-Length", strconv.FormatInt(aws.ToInt64(out.ContentLength), 10))
	if out.LastModified != nil {
		h.Set("Last-Modified", out.LastModified.UTC().Format(http.TimeFormat))
	}
	h.Set("Content-Type", aws.ToString(out.ContentType))
	status := http.StatusOK
	if out.ContentRange != nil {
		h.Set("Content-Range", *out.ContentRange)
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	n, _ := io.Copy(w, out.Body)
	p.sent.Add(n)
}

// hold keeps a stalled request until the client leaves, the proxy closes
// or maxStall passes.
func (p *Proxy) hold(r *http.Request) {
	t := time.NewTimer(maxStall)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-p.closed:
	case <-t.C:
	}
}

// resetConn resets the connection of w, or aborts the handler.
func resetConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// SetSwap makes the Swap fault send a request for a path (/BUCKET/KEY) to
// to(path) instead.
func (p *Proxy) SetSwap(to func(path string) string) {
	p.mu.Lock()
	p.swap = to
	p.mu.Unlock()
}

// cutWriter passes an answer's headers and the first half of its body
// (at least one byte short of the whole), then stalls, resets or closes.
type cutWriter struct {
	http.ResponseWriter
	p     *Proxy
	r     *http.Request
	fault Fault
	cut   int64 // -1 until the headers are known
	sent  int64
	init  bool
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if !c.init {
		c.init = true
		n, err := strconv.ParseInt(c.Header().Get("Content-Length"), 10, 64)
		c.cut = -1
		if err == nil && n > 0 {
			c.cut = n / 2
		}
	}
	if c.cut < 0 || c.sent+int64(len(b)) <= c.cut {
		n, err := c.ResponseWriter.Write(b)
		c.sent += int64(n)
		c.p.sent.Add(int64(n))
		return n, err
	}
	n, _ := c.ResponseWriter.Write(b[:c.cut-c.sent])
	c.sent += int64(n)
	c.p.sent.Add(int64(n))
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	switch c.fault {
	case StallBody:
		c.p.hold(c.r)
		panic(http.ErrAbortHandler)
	case ResetBody:
		resetConn(c.ResponseWriter)
	default: // Truncate: an orderly close after too few bytes
		if hj, ok := c.ResponseWriter.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				break
			}
		}
		panic(http.ErrAbortHandler)
	}
	return n, errors.New("s3test: answer cut")
}

func (c *cutWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// lostWriter takes an answer and drops it.
type lostWriter struct{ header http.Header }

func (l *lostWriter) Header() http.Header         { return l.header }
func (l *lostWriter) Write(b []byte) (int, error) { return len(b), nil }
func (l *lostWriter) WriteHeader(int)             {}

// SetFaults makes decide choose the fault for each request (n counts
// requests from 1); nil passes everything.
func (p *Proxy) SetFaults(decide func(n int, r *http.Request) Fault) {
	p.mu.Lock()
	p.decide = decide
	p.mu.Unlock()
}

// SetDelay delays every request by d before it is handled.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Requests is the number of requests the proxy received.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// BytesSent is the number of response body bytes passed to clients.
func (p *Proxy) BytesSent() int64 { return p.sent.Load() }

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Faults is the number of requests answered with a fault.
func (p *Proxy) Faults() int64 { return p.faults.Load() }

// Env is s.Env with the proxy as the endpoint.
func (p *Proxy) Env(s *Server) []string {
	env := s.Env()
	for i, kv := range env {
		if len(kv) > len("AWS_ENDPOINT_URL_S3=") && kv[:len("AWS_ENDPOINT_URL_S3=")] == "AWS_ENDPOINT_URL_S3=" {
			env[i] = "AWS_ENDPOINT_URL_S3=" + p.Endpoint
		}
	}
	return env
}

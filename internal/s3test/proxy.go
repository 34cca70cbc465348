package s3test

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
)

// Proxy sits between a client and a Server on its own loopback port and
// injects faults: answers of 503 SlowDown, connection resets, a delay per
// request, or refusing every connection (as a stopped server does).
type Proxy struct {
	// Endpoint is http://127.0.0.1:PORT of the proxy.
	Endpoint string

	mu       sync.Mutex
	decide   func(n int, r *http.Request) Fault
	delay    time.Duration
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
	p := &Proxy{Endpoint: "http://" + ln.Addr().String(), ln: ln}
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
	t.Cleanup(func() { p.srv.Close() })
	return p
}

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

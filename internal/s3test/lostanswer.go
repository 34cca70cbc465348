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
)

// LossyProxy sits between a client and a Server on its own loopback port
// and loses answers: a request it is told to lose is forwarded to the
// server, which carries it out, and the server's answer is read and thrown
// away; the client's connection is reset instead, as when a network drops
// the answer of a request that succeeded. Other requests pass.
type LossyProxy struct {
	// Endpoint is http://127.0.0.1:PORT of the proxy.
	Endpoint string

	mu   sync.Mutex
	lose func(r *http.Request) bool
	lost atomic.Int64
}

// NewLossyProxy starts a proxy to s for the rest of the test.
func NewLossyProxy(t testing.TB, s *Server) *LossyProxy {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &LossyProxy{Endpoint: "http://" + ln.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		lose := p.lose
		p.mu.Unlock()
		if lose == nil || !lose(r) {
			rp.ServeHTTP(w, r)
			return
		}
		// Forward the request as it came, and wait for the whole answer.
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = target.Scheme, target.Host // Host stays: it is signed
		resp, err := tr.RoundTrip(out)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			p.lost.Add(1) // carried out, and now its answer is lost
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic(http.ErrAbortHandler)
		}
		c, _, err := hj.Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not an orderly close
		}
		c.Close()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	return p
}

// LoseAnswers makes lose choose the requests whose answers are lost; nil
// loses none.
func (p *LossyProxy) LoseAnswers(lose func(r *http.Request) bool) {
	p.mu.Lock()
	p.lose = lose
	p.mu.Unlock()
}

// Lost is the number of answers of requests the server carried out (2xx)
// lost so far.
func (p *LossyProxy) Lost() int64 { return p.lost.Load() }

// Env is s.Env with the proxy as the endpoint.
func (p *LossyProxy) Env(s *Server) []string {
	env := s.Env()
	for i, kv := range env {
		if len(kv) > len("AWS_ENDPOINT_URL_S3=") && kv[:len("AWS_ENDPOINT_URL_S3=")] == "AWS_ENDPOINT_URL_S3=" {
			env[i] = "AWS_ENDPOINT_URL_S3=" + p.Endpoint
		}
	}
	return env
}

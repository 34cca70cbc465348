package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestHFURL maps hf:// paths as docs/converters.md says, and refuses
// those that name no file.
func TestHFURL(t *testing.T) {
	f, err := New(Options{HFEndpoint: "http://hub.test/", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"hf://datasets/org/name@v1.0/images/1.jpg", "http://hub.test/datasets/org/name/resolve/v1.0/images/1.jpg"},
		{"hf://datasets/org/name/a/b.png", "http://hub.test/datasets/org/name/resolve/main/a/b.png"},
		{"hf://models/org/m@refs%2Fpr%2F1/x.bin", "http://hub.test/org/m/resolve/refs%2Fpr%2F1/x.bin"},
		{"hf://datasets/org/name", ""},
		{"hf://buckets/org/name/x", ""},
	} {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.hfURL(u)
		if tc.want == "" {
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: %q, %v; want ErrUnsupported", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestFetchLimits refuses a body over MaxBytes (with or without a
// Content-Length) and a scheme it does not fetch, and names URLs without
// their user information or query.
func TestFetchLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
		}
		w.Write(make([]byte, 20))
	}))
	defer srv.Close()
	f, err := New(Options{MaxBytes: 16, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/whole", "/chunked"} {
		if _, err := f.Fetch(context.Background(), srv.URL+p); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", p, err)
		}
	}
	if _, err := f.Fetch(context.Background(), "ftp://host/x"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ftp: %v", err)
	}
	u := strings.Replace(srv.URL, "http://", "http://user:pw-secret@", 1) + "/whole?sig=q-secret"
	_, err = f.Fetch(context.Background(), u)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v shows a credential", err)
	}
	if _, err := New(Options{Getenv: func(k string) string { return map[string]string{EnvTimeout: "soon"}[k] }}); err == nil {
		t.Errorf("%s=soon accepted", EnvTimeout)
	}
}

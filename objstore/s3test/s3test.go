// Package s3test runs a real S3 server (versitygw, on its POSIX backend) on
// a free loopback port for tests: started and stopped by the test, with
// buckets made through the S3 API. It is for tests only; nothing in it
// talks to an address off this machine.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore"
)

// Server is a running S3 server.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Dir holds the server's buckets, one directory each.
	Dir string

	t    testing.TB
	bin  string
	addr string
	cmd  *exec.Cmd
	logf *os.File
}

// Binary returns the versitygw program: BPCONVERT_VERSITYGW, bin/versitygw
// in the repository (make test builds it there), or one on PATH. It skips
// t, or fails it under BPCONVERT_REQUIRE_TOOLS=1, when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BPCONVERT_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p := filepath.Join(testtool.RepoRoot(t), "bin", "versitygw"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	testtool.Missing(t, "versitygw is not built (make test builds it into bin/)")
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start runs a server for the rest of the test, with the given buckets.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	s := &Server{
		AccessKey: "AKTEST" + randHex(t, 7),
		SecretKey: randHex(t, 20),
		Dir:       t.TempDir(),
		t:         t,
		bin:       Binary(t),
	}
	s.addr = freePort(t)
	s.Endpoint = "http://" + s.addr
	s.start()
	t.Cleanup(s.Stop)
	for _, b := range buckets {
		s.MakeBucket(b)
	}
	return s
}

func randHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return strings.ToUpper(hex.EncodeToString(b))[:n*2]
}

// freePort returns a loopback address with a port nobody listens on now.
func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.Dir, "..", "versitygw.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.bin, "--port", s.addr, "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd, s.logf = cmd, logf
	// Ready once it accepts connections: at most 10 s.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if i == 100 {
			s.Stop()
			t.Fatalf("versitygw did not listen on %s within 10 s (log: %s)", s.addr, logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the server (safe to call twice).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
	s.logf.Close()
	s.cmd = nil
}

// Restart stops the server and starts it again on the same port, with the
// same buckets and objects.
func (s *Server) Restart() {
	s.Stop()
	s.start()
}

// Env is the environment a process needs to reach the server as root:
// credentials, region and endpoint, the way the AWS SDKs take them. It
// also keeps the SDK from looking for an instance role off this machine.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// Reach returns o with what reaches the server as its root user
// (endpoint, region, the root key), given as values rather than taken from
// the environment, so the tests that use it run in parallel.
func (s *Server) Reach(o objstore.Options) objstore.Options {
	o.Endpoint = s.Endpoint
	o.Region = "us-east-1"
	o.Credentials = objstore.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
	return o
}

// Client is an S3 client of the server's, for tests to look behind the
// code under test.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// MakeBucket creates a bucket through the API.
func (s *Server) MakeBucket(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		s.t.Fatalf("create bucket %s: %v", name, err)
	}
}

// Path is where the server keeps object key of bucket on disk.
func (s *Server) Path(bucket, key string) string {
	return filepath.Join(s.Dir, bucket, filepath.FromSlash(key))
}

// String names the server for messages.
func (s *Server) String() string { return fmt.Sprintf("versitygw at %s", s.Endpoint) }

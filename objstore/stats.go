package objstore

import "sync/atomic"

// Stats counts what a store moved, for summaries (bytes fetched by a plan,
// bytes uploaded by a run). Safe for concurrent use.
type Stats struct {
	requests, read, written atomic.Int64
}

// Requests is the number of requests sent.
func (s *Stats) Requests() int64 { return s.requests.Load() }

// BytesRead is the number of object bytes fetched.
func (s *Stats) BytesRead() int64 { return s.read.Load() }

// BytesWritten is the number of object bytes uploaded.
func (s *Stats) BytesWritten() int64 { return s.written.Load() }

func (s *Stats) request() {
	if s != nil {
		s.requests.Add(1)
	}
}

func (s *Stats) addRead(n int64) {
	if s != nil {
		s.read.Add(n)
	}
}

func (s *Stats) addWritten(n int64) {
	if s != nil {
		s.written.Add(n)
	}
}

package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Status is how a run ended.
type Status string

// Statuses.
const (
	StatusOK          Status = "ok"          // the conversion finished
	StatusFailed      Status = "failed"      // an error stopped it
	StatusAborted     Status = "aborted"     // the user declined or a prompt was refused
	StatusInterrupted Status = "interrupted" // a signal stopped it
	// StatusAlreadyDone: the destination already holds the output of the same
	// source and plan (a retry of a finished run); nothing was written.
	StatusAlreadyDone Status = "already_done"
)

// Summary is the outcome of a run: what was written, how long it took, and, when the run
// failed, the error and exit code. The CLI prints it under --json and writes it to
// --summary-file, on success and on failure alike.
type Summary struct {
	Status Status `json:"status"`
	// ExitCode is the process exit code that goes with Status.
	ExitCode int `json:"exit_code"`
	// Error is the error message of a run that did not finish, else "".
	Error string `json:"error"`
	// Format and Source describe the input, Dest the output directory.
	Format string `json:"format"`
	Source string `json:"source"`
	Dest   string `json:"dest"`
	// Blobs and Bytes count the payloads written into packs and their summed size;
	// Shards counts the pack files.
	Blobs  int64 `json:"blobs"`
	Bytes  int64 `json:"bytes"`
	Shards int64 `json:"shards"`
	// Counts are further converter-specific counts in display order: "videos", "frames",
	// "tables"...
	Counts Counts `json:"counts"`
	// Duration is the wall-clock time of the run; JSON carries it as duration_seconds,
	// rounded to the millisecond.
	Duration time.Duration `json:"-"`
	// Warnings met during the run.
	Warnings []string `json:"warnings"`
	// Part is the part of a split conversion this run converted ("2/8"),
	// and PartFrom where that came from ("--part 2/8", or the environment
	// variable of --part auto); both are empty for an undivided run.
	Part     string `json:"part,omitempty"`
	PartFrom string `json:"part_from,omitempty"`
	// Upload describes the uploads of a run into object storage; nil for
	// a destination on local disk.
	Upload *Upload `json:"upload,omitempty"`
	// Fetched, for a source in object storage, says what the run fetched
	// from it; nil for a local source.
	*Fetched
	// Appended, for a run that appended to a committed output, says what
	// this run added (Blobs, Bytes and Shards are the whole output's).
	Appended *Appended `json:"appended,omitempty"`
}

// Appended is what an append added to a committed output.
type Appended struct {
	// Sources counts the source files (or, for Lance and LeRobot,
	// fragments and episodes) converted; Skipped those the output held
	// already, unread; Removed those it held that have disappeared
	// (their rows kept).
	Sources int `json:"sources"`
	Skipped int `json:"skipped"`
	Removed int `json:"removed,omitempty"`
	// Blobs, Bytes and Shards count what this run wrote into packs.
	Blobs  int64 `json:"blobs"`
	Bytes  int64 `json:"bytes"`
	Shards int64 `json:"shards"`
}

// Fetched says what reading a source in object storage fetched.
type Fetched struct {
	// BytesFetched counts the object bytes read from the store.
	BytesFetched int64 `json:"bytes_fetched"`
	// Requests counts the requests sent to it.
	Requests int64 `json:"fetch_requests"`
}

// Upload is what a run into object storage sent and the bounds it kept.
type Upload struct {
	// Requests and Bytes count the requests to the destination's store
	// and the object bytes uploaded.
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes"`
	// PartBytes is the multipart part size and PartsInFlight the most
	// parts sent at once: memory for uploads stays within their product.
	PartBytes     int64 `json:"part_bytes"`
	PartsInFlight int   `json:"parts_in_flight"`
	// StagingBound is the most local disk the staged shards may take.
	StagingBound int64 `json:"staging_bound_bytes"`
}

// SummarySchema identifies summary JSON documents (the "schema" field), with the same
// compatibility promise as [PlanSchema].
const SummarySchema = "bpconvert.summary/v1"

// summaryDoc is the JSON form of a summary.
type summaryDoc struct {
	Schema string `json:"schema"`
	Summary
	DurationSeconds float64 `json:"duration_seconds"`
}

// RenderSummaryJSON writes s as one JSON document on one line followed by a newline,
// like [RenderJSON].
func RenderSummaryJSON(w io.Writer, s Summary) error {
	s.Counts = orEmpty(s.Counts)
	s.Warnings = orEmpty(s.Warnings)
	return writeJSON(w, summaryDoc{
		Schema:          SummarySchema,
		Summary:         s,
		DurationSeconds: math.Round(s.Duration.Seconds()*1000) / 1000,
	})
}

// ParseSummaryJSON reads a summary written by [RenderSummaryJSON]. Duration comes back
// with millisecond precision.
func ParseSummaryJSON(r io.Reader) (Summary, error) {
	var d summaryDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return Summary{}, fmt.Errorf("summary: %w", err)
	}
	if d.Schema != SummarySchema {
		return Summary{}, fmt.Errorf("summary: schema %q, want %q", d.Schema, SummarySchema)
	}
	s := d.Summary
	s.Duration = time.Duration(math.Round(d.DurationSeconds*1000)) * time.Millisecond
	return s, nil
}

// RenderSummaryText writes s as one or two lines for people:
//
//	wrote 118,287 blobs (18.0 GiB) in 36 shards to /data/out in 2m41.5s; 2 tables
//	failed after 3.2s: lance: data/0.lance: unexpected EOF
//
// followed by one "warning: ..." line per warning.
func RenderSummaryText(w io.Writer, s Summary) error {
	var b strings.Builder
	d := s.Duration.Round(100 * time.Millisecond)
	switch s.Status {
	case StatusOK:
		b.WriteString("wrote " + CountText(s.Blobs, "blobs") + " (" + HumanBytes(s.Bytes) + ") in " + CountText(s.Shards, "shards"))
		if s.Dest != "" {
			b.WriteString(" to " + safe(s.Dest))
		}
		b.WriteString(" in " + d.String())
		// Counts of nothing are left out of the text (JSON keeps them).
		var parts []string
		for _, c := range s.Counts {
			if c.N != 0 {
				parts = append(parts, CountText(c.N, c.Name))
			}
		}
		if len(parts) > 0 {
			b.WriteString("; " + strings.Join(parts, ", "))
		}
		if a := s.Appended; a != nil {
			fmt.Fprintf(&b, "; this append added %s (%s) in %s from %s, %s unchanged",
				CountText(a.Blobs, "blobs"), HumanBytes(a.Bytes), CountText(a.Shards, "new shards"), CountText(int64(a.Sources), "new sources"), CountText(int64(a.Skipped), "sources"))
		}
		if u := s.Upload; u != nil {
			fmt.Fprintf(&b, "; uploaded %s in %s (parts of %s, at most %d at once; staging at most %s)",
				HumanBytes(u.Bytes), CountText(u.Requests, "requests"), HumanBytes(u.PartBytes), u.PartsInFlight, HumanBytes(u.StagingBound))
		}
	case StatusAlreadyDone:
		b.WriteString("already done: " + safe(s.Dest) + " holds the output of this source and plan; nothing was written")
	default:
		status := string(s.Status)
		if status == "" {
			status = "stopped"
		}
		b.WriteString(safe(status) + " after " + d.String())
		if s.Error != "" {
			b.WriteString(": " + safe(s.Error))
		}
	}
	b.WriteByte('\n')
	for _, warn := range s.Warnings {
		b.WriteString("warning: " + safe(warn) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

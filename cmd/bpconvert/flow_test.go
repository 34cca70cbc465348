package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// fakeJob is a converter job that records whether it ran.
type fakeJob struct {
	executed  bool
	chooseErr error
	planErr   error
}

func (f *fakeJob) Plan(ctx context.Context, selected []string, _ progress.Counter) (plan.Plan, error) {
	return plan.Plan{
		Source:  plan.Source{Format: "Test", Path: "/src", Bytes: 10},
		Entries: []plan.Entry{{Name: "image", Kind: "binary column", Selectable: true, Action: plan.ActionExtract}},
	}, f.planErr
}

// TestFailedPlanDocument: a plan that finds a problem still reaches the
// reviewer of a --dry-run --json run: the error document carries it.
func TestFailedPlanDocument(t *testing.T) {
	t.Parallel()
	var so, se bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &so, stderr: &se, json: true}
	job := &fakeJob{planErr: convert.Invalid("test", "/src/t.parquet", errors.New("row 3: not a picture"))}
	res, err := e.runJob(context.Background(), &convertFlags{dryRun: true}, job)
	if err == nil {
		t.Fatal("no error")
	}
	doc := summaryDoc("convert-test", res, err, exitCode(context.Background(), err), time.Second)
	for _, want := range []string{`"status":"failed"`, `"exit_code":3`, `"plan":{`, `"schema":"bpconvert.plan/v1"`, `"name":"image"`, "not a picture"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("error document lacks %s:\n%s", want, doc)
		}
	}
}

func (f *fakeJob) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	f.executed = true
	return plan.Summary{Status: plan.StatusOK, Blobs: 3}, nil
}

func (f *fakeJob) NeedChoice() error { return f.chooseErr }

func TestFlowWithoutTerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		flags    convertFlags
		json     bool
		mustPick bool
		wantErr  string
		wantExec bool
		wantOut  string
	}{
		{name: "dry run text", flags: convertFlags{dryRun: true}, wantOut: "Test at /src"},
		{name: "dry run json", flags: convertFlags{dryRun: true}, json: true, wantOut: `{"schema":"bpconvert.plan/v1"`},
		{name: "no tty no yes", wantErr: "refusing to prompt: stdin is not a terminal"},
		{name: "yes", flags: convertFlags{yes: true}, wantExec: true},
		{name: "must choose without tty", flags: convertFlags{yes: true}, mustPick: true, wantErr: "name the columns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var so, se bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &so, stderr: &se, json: tc.json}
			flags := tc.flags
			job := &fakeJob{}
			if tc.mustPick {
				job.chooseErr = &convert.UsageError{Err: errors.New("name the columns to extract")}
			}
			res, err := e.runJob(context.Background(), &flags, job)
			executed := job.executed
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if exitCode(context.Background(), err) != exitUsage {
					t.Fatalf("err %T is not a usage error (exit 2)", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if executed != tc.wantExec {
				t.Fatalf("executed = %v", executed)
			}
			out := so.String()
			if d, ok := res.(jsonDoc); ok {
				out = string(d)
			}
			if tc.wantOut != "" && !strings.HasPrefix(out, tc.wantOut) {
				t.Fatalf("output %q, want prefix %q", out, tc.wantOut)
			}
		})
	}
}

func TestLogCounterRateLimit(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	l := &logCounter{label: "convert", w: &buf, last: now, now: func() time.Time { return now }}
	l.SetTotal(100, 1000)
	for i := range 100 {
		now = now.Add(time.Second)
		l.Add(1, 10)
		if i == 49 {
			l.Milestone("wrote pack-0000.zip")
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// 100 s of work: a status line every 30 s (3) plus one milestone.
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if strings.Contains(buf.String(), "\r") {
		t.Fatal("carriage return in log output")
	}
	if !strings.Contains(lines[0], "30 items, 300 B of 1000 B (30%)") {
		t.Fatalf("status line %q", lines[0])
	}
}

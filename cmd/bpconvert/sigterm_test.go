package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSigtermKeepsShards stops convert-wds (a whole run and a part) with
// SIGTERM, and with SIGINT (Ctrl-C), once shards are complete: it exits 143
// (130 for SIGINT), keeps the complete shards staged and says how to
// resume or discard them (on stderr, on a line of its own, and in the JSON
// summary), and the rerun resumes from them and writes what an
// uninterrupted run writes.
func TestSigtermKeepsShards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts 240 MB several times; skipped with -short")
	}
	root := t.TempDir()
	shards := wdsShards(t, root, 4, 60, 1<<20)
	args := func(dst string, extra ...string) []string {
		return append(append(append(append([]string{"convert-wds"}, shards...), dst), "--max-pack-bytes", "8MiB", "--yes", "--json"), extra...)
	}
	clean := filepath.Join(root, "clean")
	cr := bp(t, args(clean)...)
	if cr.code != 0 {
		t.Fatalf("clean run: %+v", cr)
	}
	cleanDoc := lastJSON(t, cr)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		part string
		code int
		keep bool
	}{
		{"sigterm", syscall.SIGTERM, "", 143, true},
		{"sigterm part", syscall.SIGTERM, "1/1", 143, true},
		{"sigint", syscall.SIGINT, "", 130, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			var extra []string
			final := dst
			if tc.part != "" {
				extra = []string{"--part", tc.part}
				final = filepath.Join(root, "."+filepath.Base(dst)+".bpconvert-parts", "part-0001-of-0001")
			}
			staging := filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".bpconvert-staging")
			cmd := exec.Command(binPath, args(dst, extra...)...)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !waitShards(staging, 2, final) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the run ended or stalled before 2 shards were complete")
			}
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.code {
				t.Fatalf("exit %v, want %d\n%s", err, tc.code, se.String())
			}
			var doc map[string]any
			if err := json.Unmarshal(so.Bytes(), &doc); err != nil || doc["status"] != "interrupted" {
				t.Fatalf("summary: %v %s", err, so.String())
			}
			kept := len(packShards(filepath.Join(staging, "media")))
			if !tc.keep {
				if exists(staging) || exists(dst) {
					t.Fatalf("after %v: staging %v, dst %v", tc.sig, exists(staging), exists(dst))
				}
				if !strings.Contains(se.String(), "temporary output removed") {
					t.Fatalf("stderr:\n%s", se.String())
				}
				return
			}
			if kept < 2 || exists(final) {
				t.Fatalf("after %v: %d shards kept, final %v", tc.sig, kept, exists(final))
			}
			for _, want := range []string{"\nbpconvert: " + map[syscall.Signal]string{syscall.SIGINT: "interrupted (SIGINT)", syscall.SIGTERM: "interrupted (SIGTERM)"}[tc.sig] + "; ",
				"complete shards kept in " + staging, "rerun the same command to resume", "--restart"} {
				if !strings.Contains("\n"+se.String(), want) {
					t.Fatalf("stderr lacks %q:\n%s", want, se.String())
				}
			}
			if !strings.Contains(doc["hint"].(string), "rerun the same command to resume") {
				t.Fatalf("summary hint: %v", doc["hint"])
			}
			r := bp(t, args(dst, extra...)...)
			if r.code != 0 || !strings.Contains(r.stderr, "resuming an interrupted run") {
				t.Fatalf("rerun did not resume: %+v", r)
			}
			t.Logf("%v with %d shards complete; the rerun reused them", tc.sig, kept)
			// The resumed run's summary counts the whole output, reused
			// shards included.
			if doc := lastJSON(t, r); doc["blobs"] != cleanDoc["blobs"] || doc["bytes"] != cleanDoc["bytes"] || doc["shards"] != cleanDoc["shards"] {
				t.Fatalf("resumed summary: blobs %v bytes %v shards %v; uninterrupted %v %v %v",
					doc["blobs"], doc["bytes"], doc["shards"], cleanDoc["blobs"], cleanDoc["bytes"], cleanDoc["shards"])
			}
			if tc.part != "" {
				if r := bp(t, "finalize", dst); r.code != 0 {
					t.Fatalf("finalize: %+v", r)
				}
			}
			sameMembers(t, filepath.Join(dst, "media"), filepath.Join(clean, "media"))
			sameTree(t, filepath.Join(dst, "media"), filepath.Join(clean, "media"))
			if exists(staging) {
				t.Error("staging directory left after the rerun")
			}
		})
	}
}

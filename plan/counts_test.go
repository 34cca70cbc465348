package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCountsJSONKeys: count names become snake_case JSON keys, and read back
// as the names text shows.
func TestCountsJSONKeys(t *testing.T) {
	t.Parallel()
	c := Counts{{"tables", 4}, {"row groups", 6}, {"tar shards", 2}, {"Episode-containers", 3}}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"tables":4,"row_groups":6,"tar_shards":2,"episode_containers":3}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back Counts
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back[1].Name != "row groups" || back[3].Name != "episode containers" || back[3].N != 3 {
		t.Fatalf("read back %v", back)
	}
	if _, err := json.Marshal(Counts{{"row groups", 1}, {"row_groups", 2}}); err == nil {
		t.Fatal("two names with one key were accepted")
	}
}

// TestCountTextSingular checks the singular CountText gives for a count of
// one, for the plural nouns summaries and plans use.
func TestCountTextSingular(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		plural string
		want   string
	}{
		{1, "record batches", "1 record batch"},
		{2, "record batches", "2 record batches"},
		{1, "entries", "1 entry"},
		{1, "rows", "1 row"},
		{0, "rows", "0 rows"},
		{1, "bytes not written twice", "1 bytes not written twice"},
		{1, "boxes", "1 box"},
		{1, "processes", "1 process"},
		{1, "complete shards", "1 complete shard"},
		{1, "kept external uris", "1 kept external uri"},
		{1, "", "1"},
	} {
		if got := CountText(tc.n, tc.plural); got != tc.want {
			t.Errorf("CountText(%d, %q) = %q, want %q", tc.n, tc.plural, got, tc.want)
		}
	}
}

// TestSummaryTextLeavesOutZeros: a text summary names only counts of
// something; the JSON summary keeps every count.
func TestSummaryTextLeavesOutZeros(t *testing.T) {
	s := Summary{Status: StatusOK, Blobs: 3, Bytes: 30, Shards: 1, Counts: Counts{{Name: "rows", N: 3}, {Name: "shared rows", N: 0}, {Name: "record batches", N: 1}}}
	var b strings.Builder
	if err := RenderSummaryText(&b, s); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Contains(got, "shared") || !strings.Contains(got, "; 3 rows, 1 record batch") {
		t.Fatalf("text summary: %q", got)
	}
	var j strings.Builder
	if err := RenderSummaryJSON(&j, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(j.String(), `"shared_rows":0`) {
		t.Fatalf("JSON summary lost a zero count: %s", j.String())
	}
}

package plan

import (
	"encoding/json"
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

package plan

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func evidence(unit string, values int64, kinds []string, sizes ...int64) *Evidence {
	e := &Evidence{Unit: unit, Values: values}
	for i, s := range sizes {
		if s < 0 {
			e.AddNull()
			continue
		}
		e.Add(s, kinds[i%len(kinds)])
	}
	return e
}

// lancePlan is a Lance dataset with one selected and one unselected payload column.
func lancePlan() Plan {
	return Plan{
		Source: Source{Format: "Lance", Version: "2.1", Path: "/data/coco.lance",
			Counts: Counts{{"rows", 118287}}, Bytes: 19_312_345_678},
		Dest: "/data/coco-packs",
		Entries: []Entry{
			{Name: "image", Kind: "binary column", Selectable: true, Action: ActionExtract, Fidelity: FidelitySchemaChanges,
				Evidence: evidence("", 118287, []string{"JPEG", "JPEG", "PNG"},
					163_201, 12_400, 1_150_000, 98_000, 250_333, 171_000, 40_960, 163_840),
				Notes: []string{"extracted to media/, column rewritten to blob references"}},
			{Name: "thumbnail", Kind: "blob storage class", Selectable: true, Action: ActionSkip, Fidelity: FidelitySkipped,
				Evidence: evidence("", 118287, []string{"WebP"}, 4_100, 3_900, -1, 5_000),
				Notes:    []string{"left in the table (not selected)"}},
			{Name: "other columns", Kind: "columns", Action: ActionCopy, Fidelity: FidelityLossless,
				Detail: "id, caption, width, height"},
		},
		Layout: []Output{
			{"media/pack-NNNN.zip", "blob packs (STORED zip), about 18.0 GiB"},
			{"table.lance", "the dataset, image rewritten to references"},
		},
		Notes: []string{"The rewritten dataset stays a Lance dataset: scalar queries keep\nworking, while payloads move out from under the table engine."},
	}
}

// lerobotPlan is a LeRobot v3 dataset with a video feature split per episode and an image
// feature extracted from the tables.
func lerobotPlan() Plan {
	video := evidence("files", 3, []string{"MP4"}, 110_000_000, 104_500_000, 111_000_000)
	return Plan{
		Source: Source{Format: "LeRobot", Version: "v3.0", Path: "/data/pusht",
			Counts: Counts{{"episodes", 206}, {"frames", 25650}}, Details: []string{"10 fps"}, Bytes: 345_000_000},
		Dest: "/data/pusht-packs",
		Entries: []Entry{
			{Name: "observation.images.top", Kind: "video", Action: ActionRewrite, Fidelity: FidelityLossless,
				Evidence: video,
				Notes: []string{"split into one container per episode, copied packet for packet",
					"checked: 206/206 episode boundaries land on keyframes"}},
			{Name: "observation.image", Kind: "image", Action: ActionExtract, Fidelity: FidelitySchemaChanges,
				Detail:   "25,650 frames inside the table",
				Evidence: evidence("frames", 25650, []string{"JPEG"}, 1_300, 1_250, 1_420, 1_198),
				Notes: []string{"extracted to media/, column rewritten to blob references",
					"random reads stop pulling a whole row group"}},
			{Name: "data/*.parquet", Kind: "table", Action: ActionRewrite, Fidelity: FidelitySchemaChanges,
				Detail: "3 files, 33.5 MiB"},
			{Name: "meta/", Kind: "files", Action: ActionCopy, Fidelity: FidelityLossless},
		},
		Layout: []Output{
			{"media/pack-NNNN.zip", "episode videos and extracted frames"},
			{"data/", "tables, observation.image rewritten to references"},
			{"meta/", "copied unchanged"},
			{"video_index.json", "episode intervals [from_ns, to_ns) per camera"},
		},
		Notes:    []string{"A rewritten table no longer matches the LeRobot schema: readers\nmust resolve blob references instead of reading frame bytes."},
		Warnings: []string{"episode 17: observation.images.top starts 0.4 ms after a keyframe"},
	}
}

// webdatasetPlan is a WebDataset with every member inspected.
func webdatasetPlan() Plan {
	jpg := &Evidence{Unit: "members"}
	for i := int64(0); i < 10_000; i++ {
		kind := "JPEG"
		if i%1000 == 999 {
			kind = "PNG"
		}
		jpg.Add(100_000+i*7, kind)
	}
	jpg.Values = jpg.Sampled
	cls := &Evidence{Unit: "members", Values: 10_000}
	for i := int64(0); i < 10_000; i++ {
		cls.Add(1+i%3, "text")
	}
	return Plan{
		Source: Source{Format: "WebDataset", Path: "/data/shards/train-{000000..000009}.tar",
			Counts: Counts{{"shards", 10}, {"samples", 10_000}, {"members", 30_000}}, Bytes: 1_412_000_000},
		Dest: "/data/train-packs",
		Entries: []Entry{
			{Name: "jpg", Kind: "tar members", Action: ActionExtract, Fidelity: FidelityLossless, Evidence: jpg,
				Notes: []string{"packed as media/<key>.jpg"}},
			{Name: "cls", Kind: "tar members", Action: ActionExtract, Fidelity: FidelityLossless, Evidence: cls},
			{Name: "json", Kind: "tar members", Action: ActionSkip, Fidelity: FidelitySkipped,
				Evidence: &Evidence{Unit: "members", Values: 10_000},
				Notes:    []string{"not selected (--field jpg --field cls)"}},
		},
		Layout: []Output{
			{"media/pack-NNNN.zip", "one member per tar member, keys kept"},
			{"samples.parquet", "one row per sample, one reference column per field"},
		},
		Warnings: []string{"key \"0042\" appears in shards 3 and 7; kept the first"},
	}
}

// edgePlan holds zero rows, no kinds, nulls, huge numbers and hostile names.
func edgePlan() Plan {
	huge := &Evidence{Values: math.MaxInt64, Sampled: 2, NonNull: 2, TotalBytes: math.MaxInt64 - 1,
		MeanBytes: math.MaxInt64 / 2, MinBytes: math.MaxInt64 / 4, MaxBytes: math.MaxInt64 / 2 * 3 / 2,
		Kinds: []string{"BMP", "GIF", "JPEG", "PNG", "TIFF", "WebP"}}
	return Plan{
		Source: Source{Format: "Parquet", Path: "/data/empty\n.parquet",
			Counts: Counts{{"files", 1}, {"rows", 0}}, Bytes: -1},
		Entries: []Entry{
			{Name: "empty", Kind: "binary column", Action: ActionExtract, Fidelity: FidelitySchemaChanges,
				Evidence: &Evidence{}},
			{Name: "nulls", Kind: "binary column", Action: ActionExtract, Fidelity: FidelitySchemaChanges,
				Evidence: evidence("", 1_000_000, []string{""}, -1, -1, -1)},
			{Name: "one", Kind: "binary column", Action: ActionExtract,
				Evidence: evidence("", 1, []string{""}, 1023)},
			{Name: "huge", Kind: "binary column", Action: ActionExtract, Fidelity: FidelitySchemaChanges, Evidence: huge},
			{Name: "a column name far longer than the name column is wide", Kind: "binary column", Action: ActionSkip},
			{Name: "bell\a\x1b[2J", Kind: "binary column", Action: ActionCopy,
				Notes: []string{"escape \x1b[31mred\x1b[0m"}},
		},
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		plan Plan
	}{
		{"lance", lancePlan()},
		{"lerobot", lerobotPlan()},
		{"webdataset", webdatasetPlan()},
		{"edge", edgePlan()},
		{"empty", Plan{Source: Source{Format: "Lance", Path: "/data/none.lance", Counts: Counts{{"rows", 0}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var text, js bytes.Buffer
			if err := RenderText(&text, tc.plan); err != nil {
				t.Fatal(err)
			}
			if err := RenderJSON(&js, tc.plan); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt.golden", text.Bytes())
			golden(t, tc.name+".json.golden", js.Bytes())

			if n := bytes.Count(js.Bytes(), []byte("\n")); n != 1 || !bytes.HasSuffix(js.Bytes(), []byte("\n")) {
				t.Fatalf("RenderJSON wrote %d newlines; want one line ending in a newline", n)
			}
			back, err := ParseJSON(&js)
			if err != nil {
				t.Fatal(err)
			}
			if want := normalize(tc.plan); !reflect.DeepEqual(back, want) {
				t.Fatalf("ParseJSON(RenderJSON(p)) differs:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    Summary
	}{
		{"summary-ok", Summary{Status: StatusOK, Format: "Lance", Source: "/data/coco.lance", Dest: "/data/coco-packs",
			Blobs: 118287, Bytes: 19_312_345_678, Shards: 36, Counts: Counts{{"tables", 1}},
			Duration: 161*time.Second + 523*time.Millisecond}},
		{"summary-failed", Summary{Status: StatusFailed, ExitCode: 3, Format: "WebDataset", Source: "/data/shards",
			Dest: "/data/out", Error: `wds: shards/000003.tar: member "0012.jpg": unexpected EOF`,
			Blobs: 12, Bytes: 1_200_000, Shards: 1, Duration: 3217 * time.Millisecond,
			Warnings: []string{"key \"0042\" appears twice"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var text, js bytes.Buffer
			if err := RenderSummaryText(&text, tc.s); err != nil {
				t.Fatal(err)
			}
			if err := RenderSummaryJSON(&js, tc.s); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".txt.golden", text.Bytes())
			golden(t, tc.name+".json.golden", js.Bytes())
			if n := bytes.Count(js.Bytes(), []byte("\n")); n != 1 {
				t.Fatalf("RenderSummaryJSON wrote %d newlines, want 1", n)
			}
			back, err := ParseSummaryJSON(&js)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.s
			want.Counts, want.Warnings = orEmpty(want.Counts), orEmpty(want.Warnings)
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("ParseSummaryJSON(RenderSummaryJSON(s)) differs:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestParseJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{`{"schema":"bpconvert.summary/v1"}`, `plan: schema "bpconvert.summary/v1", want "bpconvert.plan/v1"`},
		{`{"schema":"bpconvert.plan/v1","source":{"counts":[1]}}`, "plan: plan: counts: want an object"},
		{`{"schema":"bpconvert.plan/v1","source":{"counts":{"rows":1.5}}}`, `plan: plan: counts: "rows": strconv.ParseInt: parsing "1.5": invalid syntax`},
		{`not json`, "plan: invalid character 'o' in literal null (expecting 'u')"},
		{`{"schema":"bpconvert.plan/v1","source":{"counts":{"Rows":1}}}`, `plan: plan: counts: key "Rows" is not lower-case snake_case`},
		{`{"schema":"bpconvert.plan/v1","source":{"counts":{"row groups":1}}}`, `plan: plan: counts: key "row groups" is not lower-case snake_case`},
		{`{"schema":"bpconvert.plan/v1","source":{"counts":{"row-groups":1}}}`, `plan: plan: counts: key "row-groups" is not lower-case snake_case`},
	}
	for _, tc := range tests {
		_, err := ParseJSON(strings.NewReader(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseJSON(%s) error = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseSummaryJSON(strings.NewReader(`{"schema":"bpconvert.plan/v1"}`)); err == nil {
		t.Error("ParseSummaryJSON accepted a plan")
	}
}

func TestCountsDuplicate(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := Plan{Source: Source{Counts: Counts{{"rows", 1}, {"rows", 2}}}}
	if err := RenderJSON(&buf, p); err == nil {
		t.Fatal("RenderJSON accepted a count named twice")
	}
}

func TestHumanBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{163_201, "159.4 KiB"},
		{1<<20 - 1, "1.0 MiB"},
		{1<<20 - 52, "1023.9 KiB"},
		{5 << 30, "5.0 GiB"},
		{3 << 40, "3.0 TiB"},
		{1 << 50, "1.0 PiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-1, "-1 B"},
		{-2048, "-2.0 KiB"},
		{math.MinInt64, "-8.0 EiB"},
	}
	for _, tc := range tests {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{1000, "1,000"},
		{1_234_567, "1,234,567"},
		{-1_234, "-1,234"},
		{-999, "-999"},
		{math.MaxInt64, "9,223,372,036,854,775,807"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tc := range tests {
		if got := Thousands(tc.n); got != tc.want {
			t.Errorf("Thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestSampleIndices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n      int
		length int64
		want   []int64
	}{
		{0, 10, nil},
		{5, 0, nil},
		{-1, 10, nil},
		{5, 3, []int64{0, 1, 2}},
		{3, 3, []int64{0, 1, 2}},
		{1, 100, []int64{0}},
		{2, 100, []int64{0, 99}},
		{5, 101, []int64{0, 25, 50, 75, 100}},
		{4, 10, []int64{0, 3, 6, 9}},
		{3, math.MaxInt64, []int64{0, math.MaxInt64 / 2, math.MaxInt64 - 1}},
	}
	for _, tc := range tests {
		if got := SampleIndices(tc.n, tc.length); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SampleIndices(%d, %d) = %v, want %v", tc.n, tc.length, got, tc.want)
		}
	}
	// Indices are strictly increasing and within range.
	for _, length := range []int64{33, 100, 1000, 118287} {
		idx := SampleIndices(32, length)
		if len(idx) != 32 || idx[0] != 0 || idx[31] != length-1 {
			t.Fatalf("SampleIndices(32, %d) = %v", length, idx)
		}
		for i := 1; i < len(idx); i++ {
			if idx[i] <= idx[i-1] {
				t.Fatalf("SampleIndices(32, %d) not increasing: %v", length, idx)
			}
		}
	}
}

func TestEvidenceAdd(t *testing.T) {
	t.Parallel()
	var e Evidence
	e.Add(10, "PNG")
	e.AddNull()
	e.Add(30, "JPEG")
	e.Add(5, "PNG")
	e.Add(0, "")
	want := Evidence{Sampled: 5, NonNull: 4, TotalBytes: 45, MeanBytes: 11, MinBytes: 0, MaxBytes: 30,
		Kinds: []string{"JPEG", "PNG"}}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("got %+v, want %+v", e, want)
	}
}

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plan -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (- golden, + got; go test ./plan -update accepts the output):\n%s",
			path, diff(string(want), string(got)))
	}
}

// diff returns a line diff of a and b, marking removed lines "-" and added lines "+",
// with unchanged lines " " for context. Inputs are small, so a plain LCS table will do.
func diff(a, b string) string {
	lines := func(s string) []string {
		l := strings.SplitAfter(s, "\n")
		if l[len(l)-1] == "" {
			l = l[:len(l)-1]
		}
		return l
	}
	x, y := lines(a), lines(b)
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(mark string, s string) {
		out.WriteString(mark + strings.TrimSuffix(s, "\n") + "\n")
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			line(" ", x[i])
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			line("-", x[i])
			i++
		default:
			line("+", y[j])
			j++
		}
	}
	return out.String()
}

func TestDiff(t *testing.T) {
	t.Parallel()
	got := diff("a\nb\nc\n", "a\nB\nc\nd\n")
	want := " a\n-b\n+B\n c\n+d\n"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
}

func FuzzParseJSON(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json.golden"))
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"bpconvert.plan/v1","source":{"counts":{"a":1,"a":2}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseJSON(bytes.NewReader(b))
		if err != nil {
			return
		}
		var text, js bytes.Buffer
		if err := RenderText(&text, p); err != nil {
			t.Fatal(err)
		}
		if err := RenderJSON(&js, p); err != nil {
			return // for example a count named twice
		}
		if n := bytes.Count(js.Bytes(), []byte("\n")); n != 1 {
			t.Fatalf("RenderJSON wrote %d lines", n)
		}
		back, err := ParseJSON(&js)
		if err != nil {
			t.Fatalf("ParseJSON(RenderJSON(p)): %v", err)
		}
		if want := normalize(p); !reflect.DeepEqual(back, want) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", back, want)
		}
	})
}

// TestExplanations: explanations merge by topic, stay out of the text
// unless asked for (one line names their topics), come back once per topic
// with TextOptions.Explain, and are always in the JSON.
func TestExplanations(t *testing.T) {
	p := Plan{Source: Source{Format: "WebDataset", Bytes: -1}, Notes: []string{"Key check: 3 keys."}}
	p.Explain("keys", "Keys are names.")
	p.Explain("readers", "Readers read.")
	p.Explain("keys", "Directories are skipped.")
	if len(p.Explanations) != 2 || p.Explanations[0].Text != "Keys are names. Directories are skipped." {
		t.Fatalf("explanations %+v, want two topics, keys merged", p.Explanations)
	}
	var short, long, js bytes.Buffer
	if err := RenderText(&short, p); err != nil {
		t.Fatal(err)
	}
	if err := RenderTextWith(&long, p, TextOptions{Explain: true}); err != nil {
		t.Fatal(err)
	}
	if err := RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(short.String(), "Keys are") || !strings.Contains(short.String(), "  Key check: 3 keys.\n  (--explain: keys, readers)\n") {
		t.Errorf("text without Explain:\n%s", short.String())
	}
	for _, x := range []string{"Keys are names. Directories are skipped.", "Readers read.", "Key check"} {
		if strings.Count(long.String(), x) != 1 {
			t.Errorf("text with Explain shows %q %d times:\n%s", x, strings.Count(long.String(), x), long.String())
		}
		if !strings.Contains(js.String(), x) {
			t.Errorf("JSON lacks %q: %s", x, js.String())
		}
	}
	if strings.Contains(long.String(), "--explain") {
		t.Errorf("text with Explain still points at --explain:\n%s", long.String())
	}
}

// TestNotSampled: evidence of a plan that read no value says so instead of
// counting zeros; Next is the text's last line and JSON's "next".
func TestNotSampled(t *testing.T) {
	for _, tc := range []struct {
		ev   Evidence
		want string
	}{
		{Evidence{Values: 3000, NotSampled: true}, "3,000 values, " + NotSampledText},
		{Evidence{Unit: "members", NotSampled: true}, NotSampledText},
		{Evidence{Unit: "members"}, "0 members"},
	} {
		if got := EvidenceText(tc.ev); got != tc.want {
			t.Errorf("EvidenceText(%+v) = %q, want %q", tc.ev, got, tc.want)
		}
	}
	p := Plan{Source: Source{Format: "Lance", Bytes: -1}, Warnings: []string{"w"}, Next: "A real run would refuse (exit 2)."}
	var text, js bytes.Buffer
	if err := RenderText(&text, p); err != nil {
		t.Fatal(err)
	}
	if err := RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text.String(), "\n\nA real run would refuse (exit 2).\n") || !strings.Contains(js.String(), `"next":"A real run would refuse (exit 2)."`) {
		t.Errorf("Next not last in text or absent from JSON:\n%s\n%s", text.String(), js.String())
	}
}

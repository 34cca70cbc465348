// Package plan describes what a conversion will do before it does it, and what it did
// afterwards, in a form both people and programs can read.
//
// A [Plan] is a value: a converter computes it from the source (reading metadata and a few
// sampled payloads, writing nothing), the CLI renders it as aligned text ([RenderText]) or
// as one line of JSON ([RenderJSON]), asks for confirmation, and only then executes. A
// [Summary] reports the outcome of a run, successful or not, in the same JSON style. JSON
// documents read back with [ParseJSON] and [ParseSummaryJSON].
//
// [Evidence] accumulates what sampling found in a column or file group (value counts, sizes,
// sniffed kinds), and [SampleIndices] picks the rows to sample. [HumanBytes] and [Thousands]
// format numbers the way plans show them.
//
// plan is not a converter, prompt or progress reporter: it opens no files, prints nothing
// by itself and holds no global state. It knows nothing of any source format; converters
// fill in its types with their own words.
package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Plan is what a conversion will do, computed without writing anything.
type Plan struct {
	// Source describes the input.
	Source Source `json:"source"`
	// Dest is the output directory, as the user named it or resolved to an absolute path.
	Dest string `json:"dest"`
	// Entries say what becomes of each column, feature or group of files, in display order.
	Entries []Entry `json:"entries"`
	// Layout lists what will be written under Dest.
	Layout []Output `json:"layout"`
	// Notes are remarks on this run for the reader, one paragraph each (lines may be
	// split with "\n").
	Notes []string `json:"notes"`
	// Explanations say how the conversion treats the source in general (the rules for
	// keys, samples, readers, shard limits), the same from run to run: text plans show
	// them only when asked ([TextOptions.Explain]), JSON plans always.
	Explanations []Explanation `json:"explanations"`
	// Next says what a real run would do with the destination as it is now, when that
	// is not simply to write it: refuse it (and why), find it done, or resume. Text
	// plans show it on their last line.
	Next string `json:"next,omitempty"`
	// Append, for a run that appends to a committed output, says what is
	// new and converted, and what the output holds already and is skipped.
	Append *AppendPlan `json:"append,omitempty"`
	// Warnings are things the user should know before confirming.
	Warnings []string `json:"warnings"`
	// Fetched, for a source in object storage, says what planning fetched
	// from it; nil for a local source.
	*Fetched
}

// Explanation is a paragraph on one topic ("keys", "samples", "readers", "shards").
type Explanation struct {
	// Topic names what the paragraph explains, in one lower-case word.
	Topic string `json:"topic"`
	// Text is the paragraph.
	Text string `json:"text"`
}

// Explain appends an explanation on topic to the plan, or, when the plan explains
// topic already, appends text to that paragraph.
func (p *Plan) Explain(topic, text string) {
	for i := range p.Explanations {
		if p.Explanations[i].Topic == topic {
			p.Explanations[i].Text += " " + text
			return
		}
	}
	p.Explanations = append(p.Explanations, Explanation{Topic: topic, Text: text})
}

// Source describes the input of a conversion.
type Source struct {
	// Format names the source format as people know it: "Lance", "LeRobot", "WebDataset",
	// "Parquet".
	Format string `json:"format"`
	// Version is the format version when the source records one ("v3.0", "2.1"), else "".
	Version string `json:"version"`
	// Path is where the source is.
	Path string `json:"path"`
	// Counts are the source's own measures in display order: rows, files, members,
	// episodes, frames...
	Counts Counts `json:"counts"`
	// Details are short facts shown after the counts, such as "30 fps".
	Details []string `json:"details"`
	// Bytes is the size of the source on disk; negative when unknown.
	Bytes int64 `json:"bytes"`
}

// Count is one named quantity, such as {"rows", 118287}. Name is the plural form;
// [RenderText] drops a final "s" when N is 1.
type Count struct {
	Name string
	N    int64
}

// Counts is an ordered list of counts. In JSON it is an object whose keys keep the list's
// order: {"episodes":206,"frames":25650}.
type Counts []Count

// Entry says what becomes of one column, feature or group of files.
type Entry struct {
	// Name of the column, feature or file group: "image", "observation.images.top",
	// "data/*.parquet", "other columns".
	Name string `json:"name"`
	// Kind says what the entry is: "binary column", "blob storage class", "video",
	// "image", "tar members", "table", "files", "columns".
	Kind string `json:"kind"`
	// Detail is a short description shown instead of, or before, the evidence:
	// "3 file(s), 1.2 GiB", "id, caption, width".
	Detail string `json:"detail"`
	// Evidence is what sampling found; nil when nothing was sampled.
	Evidence *Evidence `json:"evidence"`
	// Selectable marks an entry the user chooses to convert or not, such as a candidate
	// payload column of a Lance or Parquet table; Action holds the current choice
	// (ActionExtract or ActionSkip). A prompt offers exactly the selectable entries.
	Selectable bool `json:"selectable"`
	// Action is what the conversion does with the entry.
	Action Action `json:"action"`
	// Fidelity says what is preserved.
	Fidelity Fidelity `json:"fidelity"`
	// Notes explain the action, one line each; with none, the text shows the action's
	// default description.
	Notes []string `json:"notes"`
}

// Action is what a conversion does with an entry.
type Action string

// Actions.
const (
	// ActionExtract moves payloads into packs and rewrites the column to references.
	ActionExtract Action = "extract"
	// ActionRewrite writes the entry anew (a table whose columns changed, a video split
	// into episodes).
	ActionRewrite Action = "rewrite"
	// ActionCopy copies the entry unchanged.
	ActionCopy Action = "copy"
	// ActionSkip leaves the entry where it is and does not convert it.
	ActionSkip Action = "skip"
)

// Describe returns the default explanation of the action shown in text plans.
func (a Action) Describe() string {
	switch a {
	case ActionExtract:
		return "extracted into packs, rewritten to blob references"
	case ActionRewrite:
		return "rewritten"
	case ActionCopy:
		return "copied unchanged"
	case ActionSkip:
		return "left in place"
	}
	return string(a)
}

// Fidelity says what a conversion preserves of an entry.
type Fidelity string

// Fidelities. The JSON values are the constants; [Fidelity.Describe] gives the words
// text plans show.
const (
	// FidelityLossless: bytes and schema are preserved.
	FidelityLossless Fidelity = "lossless"
	// FidelitySchemaChanges: every payload byte is preserved, but the table's schema
	// changes (a binary column becomes a column of references).
	FidelitySchemaChanges Fidelity = "schema_changes"
	// FidelitySchemaChangesPathDropped: every payload byte is preserved and the
	// schema changes, and a source file name stored beside the bytes (the
	// path of a Hugging Face struct<bytes, path>) is not kept.
	FidelitySchemaChangesPathDropped Fidelity = "schema_changes_path_dropped"
	// FidelityPathDropped: every payload byte is preserved and the schema
	// is kept (a Hugging Face struct<bytes, path> stays, its path holding
	// the reference), but the source file name stored in the path is not.
	FidelityPathDropped Fidelity = "path_dropped"
	// FidelitySkipped: the entry is not converted.
	FidelitySkipped Fidelity = "skipped"
)

// Describe returns the words text plans show for the fidelity.
func (f Fidelity) Describe() string {
	switch f {
	case FidelitySchemaChanges:
		return "bytes lossless, SCHEMA CHANGES"
	case FidelitySchemaChangesPathDropped:
		return "bytes lossless, SCHEMA CHANGES, source path DROPPED"
	case FidelityPathDropped:
		return "bytes lossless, schema kept, source path DROPPED"
	}
	return string(f)
}

// Output is one item of the output layout.
type Output struct {
	// Path relative to the plan's Dest: "media/pack-NNNN.zip", "table.lance".
	Path string `json:"path"`
	// Description of what it holds.
	Description string `json:"description"`
}

// PlanSchema identifies plan JSON documents (the "schema" field). It changes only when a
// field changes meaning or disappears; new fields may appear without a change.
const PlanSchema = "bpconvert.plan/v1"

// planDoc is the JSON form of a plan: its fields after a "schema" field.
type planDoc struct {
	Schema string `json:"schema"`
	Plan
}

// RenderJSON writes p as one JSON document on one line, followed by a newline, so that
// it can be the last line of a program's output (Airflow's BashOperator takes that line
// as the task's XCom). Field names are snake_case and stable (see [PlanSchema]); lists
// are [] rather than null when empty, absent evidence is null, an empty evidence unit is
// written as "values", and HTML characters are not escaped.
func RenderJSON(w io.Writer, p Plan) error {
	return writeJSON(w, planDoc{Schema: PlanSchema, Plan: normalize(p)})
}

// ParseJSON reads a plan written by [RenderJSON].
func ParseJSON(r io.Reader) (Plan, error) {
	var d planDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return Plan{}, fmt.Errorf("plan: %w", err)
	}
	if d.Schema != PlanSchema {
		return Plan{}, fmt.Errorf("plan: schema %q, want %q", d.Schema, PlanSchema)
	}
	return d.Plan, nil
}

// writeJSON encodes v on one line without HTML escaping and writes it in one call.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// normalize returns a copy of p whose lists are non-nil, so JSON shows [] for them.
func normalize(p Plan) Plan {
	p.Source.Counts = orEmpty(p.Source.Counts)
	p.Source.Details = orEmpty(p.Source.Details)
	p.Layout = orEmpty(p.Layout)
	p.Notes = orEmpty(p.Notes)
	p.Explanations = orEmpty(p.Explanations)
	p.Warnings = orEmpty(p.Warnings)
	entries := make([]Entry, len(p.Entries))
	for i, e := range p.Entries {
		e.Notes = orEmpty(e.Notes)
		if e.Evidence != nil {
			ev := *e.Evidence
			ev.Kinds = orEmpty(ev.Kinds)
			if ev.Unit == "" {
				ev.Unit = "values"
			}
			e.Evidence = &ev
		}
		entries[i] = e
	}
	p.Entries = entries
	return p
}

func orEmpty[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

// MarshalJSON writes the counts as an object whose keys keep the list's order.
func (c Counts) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := make(map[string]bool, len(c))
	for i, n := range c {
		if seen[jsonKey(n.Name)] {
			return nil, fmt.Errorf("plan: count %q appears twice", n.Name)
		}
		seen[jsonKey(n.Name)] = true
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(jsonKey(n.Name))
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		fmt.Fprintf(&buf, ":%d", n.N)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// jsonKey is a count's name as a JSON key: snake_case ("row groups" →
// "row_groups"), so that every key of the documents is an identifier.
func jsonKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return unicode.ToLower(r)
	}, name)
}

// UnmarshalJSON reads an object of integer counts, keeping the order of its
// keys; underscores become spaces again (the names as text shows them).
func (c *Counts) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("plan: counts: want an object")
	}
	out := Counts{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("plan: counts: %w", err)
		}
		name, _ := t.(string)
		var n json.Number
		if err := dec.Decode(&n); err != nil {
			return fmt.Errorf("plan: counts: %q: %w", name, err)
		}
		v, err := n.Int64()
		if err != nil {
			return fmt.Errorf("plan: counts: %q: %w", name, err)
		}
		c := Count{Name: strings.ReplaceAll(name, "_", " "), N: v}
		if jsonKey(c.Name) != name {
			// Only keys as RenderJSON writes them (lower-case snake_case):
			// any other would come back under another name.
			return fmt.Errorf("plan: counts: key %q is not lower-case snake_case", name)
		}
		out = append(out, c)
	}
	*c = out
	return nil
}

// AppendPlan is what an append converts and skips (see Plan.Append).
type AppendPlan struct {
	// Unit names what is counted: "source files", "fragments", "episodes".
	Unit string `json:"unit"`
	// New and NewBytes are what the append converts; Skipped and
	// SkippedBytes what the committed output holds already (not read);
	// Removed what it holds that has disappeared from the source (its rows
	// stay).
	New          int   `json:"new"`
	NewBytes     int64 `json:"new_bytes"`
	Skipped      int   `json:"skipped"`
	SkippedBytes int64 `json:"skipped_bytes"`
	Removed      int   `json:"removed"`
	// Base is the number of shards the committed output holds, which new
	// shards are numbered after.
	BaseShards int `json:"base_shards"`
}

// Text is the plan's line on an append.
func (a AppendPlan) Text() string {
	s := fmt.Sprintf("Append to the committed output (%s): %s (%s) to convert into new shards; %s (%s) held already, not read",
		CountText(int64(a.BaseShards), "shards"), CountText(int64(a.New), "new "+a.Unit), HumanBytes(a.NewBytes),
		CountText(int64(a.Skipped), a.Unit), HumanBytes(a.SkippedBytes))
	if a.Removed > 0 {
		s += fmt.Sprintf("; %s gone from the source, their rows kept (--allow-removed)", CountText(int64(a.Removed), a.Unit))
	}
	return s + "."
}

package plan

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Column widths and indents of text plans.
const (
	maxNameWidth = 40 // longer names are not padded further; they push their line right
	maxEvidWidth = 72 // longer evidence is not padded further; it pushes the fidelity right
	noteIndent   = "      -> "
)

// TextOptions choose what [RenderTextWith] shows.
type TextOptions struct {
	// Explain adds the plan's explanations, one paragraph per topic.
	Explain bool
}

// RenderText writes p as aligned text for people without its explanations; see
// [RenderTextWith].
func RenderText(w io.Writer, p Plan) error { return RenderTextWith(w, p, TextOptions{}) }

// RenderTextWith writes p as aligned text for people, in this shape:
//
//	Lance 2.1 at /data/coco.lance - 118,287 rows, 18.0 GiB
//
//	  field          kind           action   evidence                                    fidelity
//	  image          binary column  extract  118,287 values, 32 sampled, JPEG, 163.2 KiB mean  bytes lossless, SCHEMA CHANGES
//	      -> (an entry's notes, one line each)
//	  other columns  columns        copy     id, caption                                 lossless
//
//	Output in /data/out
//	  media/pack-NNNN.zip  blob packs
//	  table.lance          the rewritten dataset
//
//	  (the plan's notes on this run, one line or paragraph each)
//	  (--explain: keys, readers)
//
//	Warnings
//	  - (one line per warning)
//
//	(what a real run would do with the destination, when the plan says)
//
// One line per entry: its name, kind, action, detail and evidence, and fidelity, each
// column padded to its longest value (names to at most 40 runes, evidence to at most
// 72). The explanations follow the notes only with opts.Explain, one paragraph per
// topic; otherwise one line names their topics. Sizes use [HumanBytes], counts
// [Thousands]. Text that comes from the source (names, paths, notes) is shown quoted,
// Go-style, if it holds control characters or invalid UTF-8, so a column name cannot
// move the cursor. The output ends with a newline. RenderTextWith writes with one call
// to w.
func RenderTextWith(w io.Writer, p Plan, opts TextOptions) error {
	var b strings.Builder
	b.WriteString(header(p.Source))
	b.WriteString("\n\n")
	writeEntries(&b, p.Entries)

	if len(p.Layout) > 0 || p.Dest != "" {
		b.WriteString("\nOutput")
		if p.Dest != "" {
			b.WriteString(" in " + safe(p.Dest))
		}
		b.WriteByte('\n')
		pathW := 0
		for _, o := range p.Layout {
			pathW = max(pathW, min(width(o.Path), maxNameWidth))
		}
		for _, o := range p.Layout {
			b.WriteString(strings.TrimRight("  "+pad(o.Path, pathW)+"  "+safe(o.Description), " "))
			b.WriteByte('\n')
		}
	}

	paragraphs := p.Notes
	var topics []string
	for _, x := range p.Explanations {
		if opts.Explain {
			paragraphs = append(paragraphs, x.Text)
		} else if !slices.Contains(topics, x.Topic) {
			topics = append(topics, x.Topic)
		}
	}
	if len(topics) > 0 {
		paragraphs = append(paragraphs, "(--explain: "+strings.Join(topics, ", ")+")")
	}
	for i, n := range paragraphs {
		if i == 0 || opts.Explain {
			b.WriteByte('\n')
		}
		for _, line := range strings.Split(n, "\n") {
			b.WriteString(strings.TrimRight("  "+safe(line), " "))
			b.WriteByte('\n')
		}
	}

	if len(p.Warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, warn := range p.Warnings {
			b.WriteString("  - " + safe(warn) + "\n")
		}
	}
	if p.Append != nil {
		b.WriteString("\n" + safe(p.Append.Text()) + "\n")
	}
	if p.Next != "" {
		b.WriteString("\n" + safe(p.Next) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEntries writes the table of entries: a heading, then one line per entry
// followed by its notes.
func writeEntries(b *strings.Builder, entries []Entry) {
	if len(entries) == 0 {
		b.WriteString("  (no entries: nothing to convert)\n")
		return
	}
	evidence := make([]string, len(entries))
	nameW, kindW, actW, evW := len("field"), len("kind"), len("action"), len("evidence")
	for i, e := range entries {
		var parts []string
		if e.Detail != "" {
			parts = append(parts, safe(e.Detail))
		}
		if e.Evidence != nil {
			parts = append(parts, EvidenceText(*e.Evidence))
		}
		evidence[i] = strings.Join(parts, "; ")
		nameW = max(nameW, min(width(e.Name), maxNameWidth))
		kindW = max(kindW, width(e.Kind))
		actW = max(actW, width(string(e.Action)))
		evW = max(evW, min(utf8.RuneCountInString(evidence[i]), maxEvidWidth))
	}
	row := func(name, kind, action, ev, fidelity string) {
		line := "  " + pad(name, nameW) + "  " + pad(kind, kindW) + "  " + pad(action, actW) + "  " + padded(ev, evW) + "  " + safe(fidelity)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	row("field", "kind", "action", "evidence", "fidelity")
	for i, e := range entries {
		row(e.Name, e.Kind, string(e.Action), evidence[i], e.Fidelity.Describe())
		for _, n := range e.Notes {
			b.WriteString(noteIndent + safe(n) + "\n")
		}
	}
}

// padded returns s, already made safe, padded with spaces to n runes.
func padded(s string, n int) string {
	if w := utf8.RuneCountInString(s); w < n {
		s += strings.Repeat(" ", n-w)
	}
	return s
}

// header is the first line of a text plan: format, version, path, counts, details, size.
func header(s Source) string {
	var b strings.Builder
	for _, part := range []string{s.Format, s.Version} {
		if part != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(safe(part))
		}
	}
	if b.Len() == 0 {
		b.WriteString("source")
	}
	if s.Path != "" {
		b.WriteString(" at " + safe(s.Path))
	}
	var facts []string
	for _, c := range s.Counts {
		facts = append(facts, CountText(c.N, c.Name))
	}
	for _, d := range s.Details {
		facts = append(facts, safe(d))
	}
	if s.Bytes >= 0 {
		facts = append(facts, HumanBytes(s.Bytes))
	}
	if len(facts) > 0 {
		b.WriteString(" - " + strings.Join(facts, ", "))
	}
	return b.String()
}

// CountText formats a count with its plural noun: "1,234 rows", "1 row" (a final "s" is
// dropped when n is 1), "0 rows".
func CountText(n int64, plural string) string {
	noun := plural
	if n == 1 {
		noun = singular(plural)
	}
	if noun == "" {
		return Thousands(n)
	}
	return Thousands(n) + " " + safe(noun)
}

// singular is the singular of an English plural noun phrase, its last word
// changed: "record batches" -> "record batch", "entries" -> "entry",
// "rows" -> "row"; a phrase that does not end in "s" is returned as it is.
func singular(plural string) string {
	for _, end := range []string{"ches", "shes", "sses", "xes", "zzes"} {
		if strings.HasSuffix(plural, end) {
			return strings.TrimSuffix(plural, "es")
		}
	}
	if strings.HasSuffix(plural, "ies") && len(plural) > 4 {
		return strings.TrimSuffix(plural, "ies") + "y"
	}
	return strings.TrimSuffix(plural, "s")
}

// maxKinds is how many kinds an evidence line names before it summarises the rest.
const maxKinds = 4

// EvidenceText formats evidence on one line, as text plans show it:
//
//	118,287 values, 32 sampled, JPEG/PNG, 163.2 KiB mean (12.1 KiB-1.1 MiB)
//	3 files, MP4, 1.2 GiB mean (1.1 GiB-1.3 GiB), 3.6 GiB total
//	1,000 values, 32 sampled, 4 null, text, 38 B mean (3 B-120 B)
//
// "sampled" appears when fewer values were inspected than exist, "null" when inspected
// values were null, "total" only when every value was inspected. Kinds beyond four are
// counted ("JPEG/PNG/TIFF/WebP/+2 more").
func EvidenceText(e Evidence) string {
	unit := e.Unit
	if unit == "" {
		unit = "values"
	}
	if e.NotSampled {
		if e.Values > 0 {
			return CountText(e.Values, unit) + ", " + NotSampledText
		}
		return NotSampledText
	}
	parts := []string{CountText(e.Values, unit)}
	exhaustive := e.Sampled >= e.Values
	switch {
	case e.Nulls != nil && *e.Nulls >= e.Values && e.Values > 0:
		parts = append(parts, "all null")
	case e.Nulls != nil && *e.Nulls > 0:
		parts = append(parts, Thousands(*e.Nulls)+" null")
	}
	if !exhaustive {
		parts = append(parts, Thousands(e.Sampled)+" sampled")
	}
	if nulls := e.Sampled - e.NonNull; nulls > 0 && e.Nulls == nil {
		// The sample's nulls, said as such when not every value was read.
		switch {
		case e.NonNull == 0 && exhaustive:
			parts = append(parts, "all null")
		case e.NonNull == 0:
			parts = append(parts, "all of them null")
		case exhaustive:
			parts = append(parts, Thousands(nulls)+" null")
		default:
			parts = append(parts, Thousands(nulls)+" of them null")
		}
	}
	if len(e.Kinds) > 0 {
		kinds := make([]string, 0, maxKinds+1)
		for i, k := range e.Kinds {
			if i == maxKinds {
				kinds = append(kinds, "+"+strconv.Itoa(len(e.Kinds)-maxKinds)+" more")
				break
			}
			kinds = append(kinds, safe(k))
		}
		parts = append(parts, strings.Join(kinds, "/"))
	}
	if e.NonNull > 0 {
		if e.MinBytes == e.MaxBytes {
			parts = append(parts, HumanBytes(e.MinBytes)+" each")
		} else {
			parts = append(parts, HumanBytes(e.MeanBytes)+" mean ("+HumanBytes(e.MinBytes)+"-"+HumanBytes(e.MaxBytes)+")")
		}
		if exhaustive {
			parts = append(parts, HumanBytes(e.TotalBytes)+" total")
		}
	}
	return strings.Join(parts, ", ")
}

// safe returns s unchanged when it is valid UTF-8 without control characters, else
// quoted with Go escapes.
func safe(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// width is the display width of safe(s), counted in runes.
func width(s string) int { return utf8.RuneCountInString(safe(s)) }

// pad returns safe(s) padded with spaces to n runes.
func pad(s string, n int) string {
	s = safe(s)
	if w := utf8.RuneCountInString(s); w < n {
		s += strings.Repeat(" ", n-w)
	}
	return s
}

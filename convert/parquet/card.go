package parquet

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

// Metadata files beside the tables that declare the features: the dataset
// card's YAML front matter (dataset_info.features) and dataset_info.json.
// Both are rewritten like the tables' huggingface metadata, so that a
// reader of the card or of the info learns that the extracted columns now
// hold strings; everything else in them is kept as written.
const (
	cardName = "README.md"
	infoName = "dataset_info.json"
)

// rewriteCard declares every path in paths as a string feature in a
// dataset card's YAML front matter (dataset_info.features, or
// dataset_info[].features for several configs): the dtype of the feature
// at the path (looking through sequence and list wrappers, and into struct
// features) becomes "string". Every other byte of the card is kept. changed
// is false when the card declares none of the paths (or has no front
// matter).
func rewriteCard(card []byte, paths [][]string) (out []byte, changed bool, err error) {
	lines := strings.SplitAfter(string(card), "\n")
	if len(lines) < 2 || strings.TrimRight(lines[0], "\r\n") != "---" {
		return card, false, nil
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], "\r\n") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return card, false, errors.New("dataset card: YAML front matter has no closing ---")
	}
	type item struct {
		indent int
		name   string
	}
	var (
		b         strings.Builder
		inFeat    = false
		featInd   = 0
		stack     []item
		skipBelow = -1 // drop lines indented deeper than this (a replaced block)
	)
	b.WriteString(lines[0])
	for i := 1; i < end; i++ {
		line := lines[i]
		text := strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimLeft(text, " ")
		ind := len(text) - len(trimmed)
		if skipBelow >= 0 {
			if trimmed == "" || ind > skipBelow {
				continue
			}
			skipBelow = -1
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			b.WriteString(line)
			continue
		}
		if inFeat && (ind < featInd || (ind == featInd && !strings.HasPrefix(trimmed, "- "))) {
			inFeat, stack = false, nil
		}
		if !inFeat {
			key := strings.TrimPrefix(trimmed, "- ")
			if key == "features:" {
				inFeat, featInd, stack = true, ind+len(trimmed)-len(key), nil
			}
			b.WriteString(line)
			continue
		}
		// An item of a features list: "- name: X".
		if rest, ok := strings.CutPrefix(trimmed, "- "); ok {
			for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
				stack = stack[:len(stack)-1]
			}
			if name, ok := strings.CutPrefix(rest, "name: "); ok {
				stack = append(stack, item{ind, unquoteYAML(name)})
			}
			b.WriteString(line)
			continue
		}
		// A property of the item whose keys sit at this indent.
		k := len(stack) - 1
		for k >= 0 && stack[k].indent+2 != ind {
			k--
		}
		if k < 0 {
			b.WriteString(line)
			continue
		}
		stack = stack[:k+1]
		key, val, _ := strings.Cut(trimmed, ":")
		val = strings.TrimSpace(val)
		if key != "dtype" && key != "sequence" && key != "list" {
			b.WriteString(line)
			continue
		}
		path := make([]string, len(stack))
		for j, it := range stack {
			path[j] = it.name
		}
		if !selected(paths, path) || val == "string" {
			b.WriteString(line)
			continue
		}
		if val == "" {
			// A block: a feature with arguments (audio: {sampling_rate}),
			// or a list of struct fields, which a leaf path never names.
			next := ""
			for j := i + 1; j < end; j++ {
				if t := strings.TrimSpace(lines[j]); t != "" {
					next = t
					break
				}
			}
			if strings.HasPrefix(next, "- ") {
				b.WriteString(line)
				continue
			}
			skipBelow = ind
		}
		eol := line[len(text):]
		b.WriteString(text[:ind] + key + ": string" + eol)
		changed = true
	}
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	if !changed {
		return card, false, nil
	}
	return []byte(b.String()), true, nil
}

// unquoteYAML removes the quotes of a quoted YAML scalar.
func unquoteYAML(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'') {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// rewriteInfo declares every path in paths as a string Value in a
// dataset_info.json (its "features" object), as rewriteHF does for the
// tables' metadata. Members it does not change keep their spelling.
func rewriteInfo(info []byte, paths [][]string) (out []byte, changed bool, err error) {
	top, ok := parseObject(bytes.TrimSpace(info))
	if !ok {
		return info, false, errors.New("dataset_info.json is not a JSON object")
	}
	fi := find(top, "features")
	if fi < 0 {
		return info, false, nil
	}
	feats := top[fi].Value
	for _, p := range paths {
		if f, ok := rewriteFeatureAt(feats, p); ok {
			feats, changed = f, true
		}
	}
	if !changed {
		return info, false, nil
	}
	top[fi].Value = feats
	body := []byte(encodeObject(top))
	if indent, ok := jsonIndent(info); ok {
		// An indented file (datasets writes dataset_info.json with
		// indent=2) is indented again the same way, which leaves the
		// members it does not change as they were.
		var compact, b bytes.Buffer
		if json.Compact(&compact, body) == nil && json.Indent(&b, compact.Bytes(), "", indent) == nil {
			body = b.Bytes()
		}
	}
	trailing := info[len(bytes.TrimRight(info, " \t\r\n")):]
	out = append(body, trailing...)
	return out, true, nil
}

// jsonIndent returns the indentation of an indented JSON object: the
// spaces or tabs that start its second line, when its first line is "{".
func jsonIndent(b []byte) (string, bool) {
	first, rest, ok := bytes.Cut(bytes.TrimLeft(b, " \t\r\n"), []byte("\n"))
	if !ok || string(bytes.TrimSpace(first)) != "{" {
		return "", false
	}
	n := len(rest) - len(bytes.TrimLeft(rest, " \t"))
	if n == 0 {
		return "", false
	}
	return string(rest[:n]), true
}

// rewriteMetadataFile writes the dataset card or a dataset_info.json (kind,
// see inputs.metaKind) with the extracted paths declared as strings. done
// is false for any other file, and for one that declares none of the
// paths: those are copied unchanged.
func rewriteMetadataFile(f inputFile, kind, dst string, paths [][]string) (done bool, err error) {
	var rewrite func([]byte, [][]string) ([]byte, bool, error)
	switch kind {
	case cardName:
		rewrite = rewriteCard
	case infoName:
		rewrite = rewriteInfo
	default:
		return false, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return false, err
	}
	out, changed, err := rewrite(b, paths)
	if err != nil || !changed {
		// A file that does not parse as a card or an info is copied as it
		// is: it declares nothing a reader could take for the tables'.
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	return true, atomicfile.WriteFile(dst, out, 0o644)
}

// metadataRewrites lists the metadata files beside the tables (the dataset
// card, dataset_info.json) that a conversion of paths rewrites. Reading
// them writes nothing; a file that cannot be read or parsed is left to the
// conversion to report.
func (ins *Inspection) metadataRewrites(paths [][]string) []string {
	var out []string
	for _, f := range ins.in.others {
		var rewrite func([]byte, [][]string) ([]byte, bool, error)
		switch ins.in.metaKind(f.rel) {
		case cardName:
			rewrite = rewriteCard
		case infoName:
			rewrite = rewriteInfo
		default:
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			continue
		}
		if _, changed, err := rewrite(b, paths); err == nil && changed {
			out = append(out, f.rel)
		}
	}
	return out
}

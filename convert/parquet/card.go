package parquet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/jsonobj"
)

// Metadata files beside the tables that declare the features: the dataset
// card's YAML front matter (dataset_info.features, and configs, which name
// the data files) and dataset_info.json. Both are rewritten like the
// tables' huggingface metadata, so that a reader of the card or of the
// info learns what the extracted fields hold now; everything else in them
// is kept.
const (
	cardName = "README.md"
	infoName = "dataset_info.json"
)

// featureEdit is how a conversion changes the features a dataset declares.
type featureEdit struct {
	// strings are the fields that become reference strings (binary
	// fields, and media structs with --hf-media string).
	strings [][]string
	// siblings are the media fields that get a string field beside them,
	// named with PathSuffix, holding the source's path (--keep-path).
	siblings [][]string
}

// PathSuffix names the field that --keep-path adds beside a media field:
// image_path beside image.
const PathSuffix = "_path"

// cardEdit is what a conversion changes in the dataset card: the features
// and, when the output would not load without them, the configs' data
// files.
type cardEdit struct {
	features featureEdit
	// tables are the output's tables (slash paths relative to the root),
	// and packFiles the names a pack directory holds (media/pack-0000.zip,
	// media/pack.manifest.json): a configs pattern that matches a pack
	// file is replaced by the tables it matches.
	tables    []string
	packFiles []string
	// addConfigs is set when the card must gain configs naming the tables
	// (it has none, and datasets would otherwise take every file for data).
	addConfigs bool
}

// splitFrontMatter returns a card's YAML front matter (without its ---
// lines) and the rest. ok is false when the card has none.
func splitFrontMatter(card []byte) (yml, body []byte, ok bool, err error) {
	lines := strings.SplitAfter(string(card), "\n")
	if len(lines) < 2 || strings.TrimRight(lines[0], "\r\n") != "---" {
		return nil, card, false, nil
	}
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], "\r\n") == "---" {
			return []byte(strings.Join(lines[1:i], "")), []byte(strings.Join(lines[i+1:], "")), true, nil
		}
	}
	return nil, nil, false, errors.New("dataset card: YAML front matter has no closing ---")
}

// rewriteCard applies e to a dataset card's YAML front matter: the
// features of dataset_info (one config's, or every config's) declare the
// extracted fields as strings and gain the --keep-path fields, and configs
// name data files that hold no pack file. The YAML is parsed, its anchors
// and aliases resolved (PyYAML writes them for configs that share one
// features list), and written back as plain YAML, comments kept; the body
// after the front matter is kept byte for byte. changed is false when
// nothing needed to change (the card is then copied as it is).
func rewriteCard(card []byte, e cardEdit) (out []byte, changed bool, err error) {
	yml, body, has, err := splitFrontMatter(card)
	if err != nil {
		return card, false, err
	}
	var doc yaml.Node
	if has && len(bytes.TrimSpace(yml)) > 0 {
		if err := yaml.Unmarshal(yml, &doc); err != nil {
			return card, false, fmt.Errorf("dataset card: YAML front matter: %w", err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return card, false, errors.New("dataset card: YAML front matter is not a mapping")
	}
	top := doc.Content[0]
	changed = resolveAliases(&doc)
	if info := mapValue(top, "dataset_info"); info != nil {
		infos := []*yaml.Node{info}
		if info.Kind == yaml.SequenceNode {
			infos = info.Content
		}
		for _, in := range infos {
			feats := mapValue(in, "features")
			if feats == nil || feats.Kind != yaml.SequenceNode {
				continue
			}
			for _, p := range e.features.strings {
				if it := cardFeature(feats, p); it != nil && stringifyItem(it) {
					changed = true
				}
			}
			for _, p := range e.features.siblings {
				if addCardSibling(feats, p) {
					changed = true
				}
			}
		}
	}
	if configs := mapValue(top, "configs"); configs != nil {
		if fixConfigs(configs, e) {
			changed = true
		}
	} else if e.addConfigs && len(e.tables) > 0 {
		setMapValue(top, "configs", defaultConfigs(e.tables))
		changed = true
	}
	if !changed {
		return card, false, nil
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return card, false, fmt.Errorf("dataset card: %w", err)
	}
	if err := enc.Close(); err != nil {
		return card, false, err
	}
	b.WriteString("---\n")
	if !has && len(body) > 0 {
		b.WriteString("\n")
	}
	b.Write(body)
	return b.Bytes(), true, nil
}

// resolveAliases replaces every alias in the tree with a copy of what its
// anchor names and removes the anchors; it reports whether there were any.
func resolveAliases(n *yaml.Node) bool {
	found := n.Anchor != ""
	n.Anchor = ""
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode && c.Alias != nil {
			n.Content[i] = deepCopy(c.Alias)
			found = true
		}
		if resolveAliases(n.Content[i]) {
			found = true
		}
	}
	return found
}

// deepCopy copies a YAML tree, aliases resolved.
func deepCopy(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return deepCopy(n.Alias)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = deepCopy(k)
	}
	return &c
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setMapValue sets key in a mapping node, appending it when absent.
func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// itemFields returns the field items of a struct feature item ("struct:
// [...]", or a sequence or list of structs), or nil.
func itemFields(it *yaml.Node) *yaml.Node {
	for _, k := range []string{"struct", "sequence", "list"} {
		v := mapValue(it, k)
		for v != nil && v.Kind == yaml.MappingNode {
			next := (*yaml.Node)(nil)
			for _, kk := range []string{"struct", "sequence", "list"} {
				if x := mapValue(v, kk); x != nil {
					next = x
					break
				}
			}
			v = next
		}
		if v != nil && v.Kind == yaml.SequenceNode {
			return v
		}
	}
	return nil
}

// cardFeature returns the feature item at path in a features list, or nil.
func cardFeature(feats *yaml.Node, p []string) *yaml.Node {
	idx := cardFeatureIndex(feats, p[0])
	if idx < 0 {
		return nil
	}
	it := feats.Content[idx]
	if len(p) == 1 {
		return it
	}
	sub := itemFields(it)
	if sub == nil {
		return nil
	}
	return cardFeature(sub, p[1:])
}

func cardFeatureIndex(feats *yaml.Node, name string) int {
	for i, it := range feats.Content {
		if n := mapValue(it, "name"); n != nil && n.Value == name {
			return i
		}
	}
	return -1
}

// stringifyItem declares a feature item as a string: the value of its
// dtype (or, for lists, of the innermost sequence or list) becomes
// "string". It reports whether anything changed.
func stringifyItem(it *yaml.Node) bool {
	for i := 0; i+1 < len(it.Content); i += 2 {
		switch it.Content[i].Value {
		case "dtype", "sequence", "list":
			return stringifyType(&it.Content[i+1])
		}
	}
	return false
}

// stringifyType makes a type node "string": a scalar, a media type with
// arguments (audio: {sampling_rate: 16000}) or a list of one.
func stringifyType(v **yaml.Node) bool {
	n := *v
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch n.Content[i].Value {
			case "dtype", "sequence", "list":
				return stringifyType(&n.Content[i+1])
			}
		}
	}
	if n.Kind == yaml.SequenceNode {
		return false // struct fields: a leaf path never names them
	}
	if n.Kind == yaml.ScalarNode && n.Value == "string" {
		return false
	}
	*v = scalar("string")
	return true
}

// addCardSibling adds the --keep-path field beside the media feature at
// path: a copy of its item named with PathSuffix, declared as a string
// (of the same list shape). It reports whether it added one.
func addCardSibling(feats *yaml.Node, p []string) bool {
	parent := feats
	if len(p) > 1 {
		it := cardFeature(feats, p[:len(p)-1])
		if it == nil {
			return false
		}
		if parent = itemFields(it); parent == nil {
			return false
		}
	}
	name := p[len(p)-1]
	i := cardFeatureIndex(parent, name)
	if i < 0 || cardFeatureIndex(parent, name+PathSuffix) >= 0 {
		return false
	}
	sib := deepCopy(parent.Content[i])
	setMapValue(sib, "name", scalar(name+PathSuffix))
	stringifyItem(sib)
	parent.Content = slices.Insert(parent.Content, i+1, sib)
	return true
}

// defaultConfigs is the configs entry that names the tables as the train
// split of the default config.
func defaultConfigs(tables []string) *yaml.Node {
	paths := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, t := range tables {
		paths.Content = append(paths.Content, scalar(t))
	}
	split := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{scalar("split"), scalar("train"), scalar("path"), paths}}
	cfg := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		scalar("config_name"), scalar("default"),
		scalar("data_files"), {Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{split}},
	}}
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{cfg}}
}

// fixConfigs replaces, in every config's data_files, each pattern that
// matches a pack file with the tables it matches (a pattern such as "**"
// or "*/*" would have datasets read the shards as data). It reports
// whether it changed anything.
func fixConfigs(configs *yaml.Node, e cardEdit) bool {
	if configs.Kind != yaml.SequenceNode {
		return false
	}
	changed := false
	var fix func(v **yaml.Node)
	fix = func(v **yaml.Node) {
		n := *v
		switch n.Kind {
		case yaml.ScalarNode:
			if !slices.ContainsFunc(e.packFiles, func(f string) bool { return globMatch(n.Value, f) }) {
				return
			}
			list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, t := range e.tables {
				if globMatch(n.Value, t) {
					list.Content = append(list.Content, scalar(t))
				}
			}
			*v, changed = list, true
		case yaml.SequenceNode:
			var out []*yaml.Node
			for i := range n.Content {
				fix(&n.Content[i])
				if c := n.Content[i]; c.Kind == yaml.SequenceNode && n.Content[i] != nil {
					out = append(out, c.Content...) // a pattern that became a list
					continue
				}
				out = append(out, n.Content[i])
			}
			n.Content = out
		case yaml.MappingNode: // {split: train, path: ...}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "path" {
					fix(&n.Content[i+1])
				}
			}
		}
	}
	for _, cfg := range configs.Content {
		for i := 0; i+1 < len(cfg.Content); i += 2 {
			if cfg.Content[i].Value == "data_files" {
				fix(&cfg.Content[i+1])
			}
		}
	}
	return changed
}

// globMatch reports whether a data_files pattern, relative to the dataset
// root, matches the slash path name as fsspec's glob does: "*", "?" and
// "[...]" within a path segment, "**" across any number of them.
func globMatch(pattern, name string) bool {
	return globSegs(strings.Split(strings.TrimPrefix(pattern, "./"), "/"), strings.Split(name, "/"))
}

func globSegs(ps, ns []string) bool {
	if len(ps) == 0 {
		return len(ns) == 0
	}
	if ps[0] == "**" {
		for k := 0; k <= len(ns); k++ {
			if globSegs(ps[1:], ns[k:]) {
				return true
			}
		}
		return false
	}
	if len(ns) == 0 {
		return false
	}
	seg := ps[0]
	if strings.Contains(seg, "**") {
		// "**" inside a segment (train-**) reaches across segments.
		re := strings.ReplaceAll(seg, "**", "*")
		for k := 1; k <= len(ns); k++ {
			if ok, _ := path.Match(re, strings.Join(ns[:k], "\x00")); ok && globSegs(ps[1:], ns[k:]) {
				return true
			}
		}
		return false
	}
	ok, err := path.Match(seg, ns[0])
	return err == nil && ok && globSegs(ps[1:], ns[1:])
}

// splitKeywords are the words datasets finds splits by in file and
// directory names when a card names no data files.
var splitKeywords = []string{"train", "training", "validation", "valid", "dev", "val", "test", "testing", "eval", "evaluation"}

// namesSplit reports whether datasets would take the slash path rel for a
// split's data file by its name: a segment that is a split keyword, or
// holds one between non-word characters (-._ space digits) or at its start
// or (for a directory) end.
func namesSplit(rel string) bool {
	sep := func(r byte) bool { return r == '-' || r == '.' || r == '_' || r == ' ' || r >= '0' && r <= '9' }
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		dir := i < len(segs)-1
		for _, kw := range splitKeywords {
			for at := strings.Index(s, kw); at >= 0; {
				end := at + len(kw)
				before := at == 0 || sep(s[at-1])
				after := end < len(s) && sep(s[end]) || dir && end == len(s)
				if before && after {
					return true
				}
				next := strings.Index(s[at+1:], kw)
				if next < 0 {
					break
				}
				at += 1 + next
			}
		}
	}
	return false
}

// rewriteInfo applies e to a dataset_info.json (its "features" object), as
// rewriteHF does to the tables' metadata. Members it does not change keep
// their spelling.
func rewriteInfo(info []byte, e featureEdit) (out []byte, changed bool, err error) {
	top, ok := parseObject(bytes.TrimSpace(info))
	if !ok {
		return info, false, errors.New("dataset_info.json is not a JSON object")
	}
	fi := find(top, "features")
	if fi < 0 {
		return info, false, nil
	}
	feats, changed := editFeatures(top[fi].Value, e)
	if !changed {
		return info, false, nil
	}
	top[fi].Value = feats
	body := []byte(jsonobj.Encode(top))
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
// see inputs.metaKind) as the conversion changes it. done is false for any
// other file, and for one that needs no change: those are copied
// unchanged.
func (in *inputs) rewriteMetadataFile(ctx context.Context, f inputFile, kind, dst string, e cardEdit) (done bool, err error) {
	if kind == "" {
		return false, nil
	}
	b, err := in.readMeta(ctx, f.rel)
	if err != nil {
		return false, err
	}
	out, changed, err := rewriteMetadata(kind, b, e)
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

// rewriteMetadata rewrites a card or an info (kind) as e says.
func rewriteMetadata(kind string, b []byte, e cardEdit) ([]byte, bool, error) {
	switch kind {
	case cardName:
		return rewriteCard(b, e)
	case infoName:
		return rewriteInfo(b, e.features)
	}
	return b, false, nil
}

// metadataRewrites lists the metadata files beside the tables (the dataset
// card, dataset_info.json) that a conversion rewrites as e says. Reading
// them writes nothing; a file that cannot be read or parsed is left to the
// conversion to report.
func (ins *Inspection) metadataRewrites(e cardEdit) []string {
	var out []string
	for _, f := range ins.in.others {
		kind := ins.in.metaKind(f.rel)
		if kind == "" {
			continue
		}
		b, err := ins.in.readMeta(context.Background(), f.rel)
		if err != nil {
			continue
		}
		if _, changed, err := rewriteMetadata(kind, b, e); err == nil && changed {
			out = append(out, f.rel)
		}
	}
	return out
}

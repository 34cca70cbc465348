package lancefmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Tag is a named reference to a dataset version (_refs/tags/NAME.json).
type Tag struct {
	Name    string
	Version uint64
	// Branch is the branch the tagged version belongs to, "" for the main
	// line of versions.
	Branch string
	raw    map[string]any // the file's fields, kept when the tag is rewritten
}

// Tags returns the dataset's tags, by name; none when it has no _refs/tags.
func (d *Dataset) Tags() ([]Tag, error) {
	dir := joinPath(d.dir, "_refs", "tags")
	var files []string
	err := d.listFiles(d.ctx, dir, func(e FileInfo) error {
		if !strings.Contains(e.Name, "/") {
			files = append(files, e.Name)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lance: %s: tags: %w", d.dir, err)
	}
	var out []Tag
	for _, file := range files {
		name, ok := strings.CutSuffix(file, ".json")
		if !ok {
			continue
		}
		b, err := d.readFile(d.ctx, joinPath(dir, file))
		if err != nil {
			return nil, fmt.Errorf("lance: %s: tag %q: %w", d.dir, name, err)
		}
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("lance: %s: tag %q: %w: %v", d.dir, name, errCorrupt, err)
		}
		v, ok := raw["version"].(float64)
		if !ok || v < 1 || v != float64(uint64(v)) {
			return nil, fmt.Errorf("lance: %s: tag %q: %w: version %v", d.dir, name, errCorrupt, raw["version"])
		}
		t := Tag{Name: name, Version: uint64(v), raw: raw}
		if br, ok := raw["branch"].(string); ok {
			t.Branch = br
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// writeTags writes, in the new one-version dataset, the tags that name the
// rewritten version, pointing at version 1 and its manifest of
// manifestSize bytes, their other fields unchanged.
func (rw *rewriter) writeTags(manifestSize int) error {
	var kept []Tag
	for _, t := range rw.tags {
		if t.Kept {
			kept = append(kept, t.tag)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	dir := filepath.Join(rw.dst, "_refs", "tags")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range kept {
		raw := map[string]any{}
		for k, v := range t.raw {
			raw[k] = v
		}
		raw["version"] = 1
		raw["manifestSize"] = manifestSize
		b, err := json.MarshalIndent(raw, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileSync(filepath.Join(dir, t.Name+".json"), b); err != nil {
			return fmt.Errorf("tag %q: %w", t.Name, err)
		}
	}
	for _, sub := range []string{filepath.Join("_refs", "tags"), "_refs"} {
		if err := syncDir(filepath.Join(rw.dst, sub)); err != nil {
			return err
		}
	}
	return nil
}

// TagPlan says what happens to one tag of the source.
type TagPlan struct {
	Name    string
	Version uint64 // the version it names in the source
	Branch  string // "" for the main line
	// Kept is true when the tag names the rewritten version (on the main
	// line) and is written, naming version 1 of the new dataset.
	Kept bool
	tag  Tag
}

// planTags decides which tags a rewrite of version v keeps.
func planTags(tags []Tag, v uint64) []TagPlan {
	var out []TagPlan
	for _, t := range tags {
		out = append(out, TagPlan{Name: t.Name, Version: t.Version, Branch: t.Branch, Kept: t.Version == v && t.Branch == "", tag: t})
	}
	return out
}

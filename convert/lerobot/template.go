package lerobot

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// formatTemplate fills a Python str.format template such as
// "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
// with vals (int64 or string). It understands exactly the forms LeRobot
// writes: "{name}", "{name:d}", "{name:Nd}" and "{name:0Nd}" (ints only),
// and the escapes "{{" and "}}". Anything else is refused rather than guessed.
// The result must be a local, slash-separated path.
func formatTemplate(tmpl string, vals map[string]any) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '}':
			return "", fmt.Errorf("template %q: single '}' at byte %d", tmpl, i)
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("template %q: unclosed '{' at byte %d", tmpl, i)
			}
			field := tmpl[i+1 : i+end]
			s, err := formatField(field, vals)
			if err != nil {
				return "", fmt.Errorf("template %q: %w", tmpl, err)
			}
			b.WriteString(s)
			i += end
		default:
			b.WriteByte(c)
		}
	}
	p := b.String()
	if strings.Contains(p, `\`) || !filepath.IsLocal(filepath.FromSlash(p)) || p != filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) {
		return "", fmt.Errorf("template %q gives %q, which is not a clean path inside the dataset", tmpl, p)
	}
	return p, nil
}

// formatField formats one replacement field "name" or "name:spec".
func formatField(field string, vals map[string]any) (string, error) {
	name, spec, hasSpec := strings.Cut(field, ":")
	v, ok := vals[name]
	if !ok {
		return "", fmt.Errorf("unknown field {%s} (known here: %s)", field, knownFields(vals))
	}
	switch v := v.(type) {
	case string:
		if hasSpec && spec != "" && spec != "s" {
			return "", fmt.Errorf("field {%s}: unsupported format spec %q for a string", field, spec)
		}
		return v, nil
	case int64:
		if v < 0 {
			return "", fmt.Errorf("field {%s}: negative value %d", field, v)
		}
		s := strconv.FormatInt(v, 10)
		if !hasSpec || spec == "" || spec == "d" {
			return s, nil
		}
		digits, ok := strings.CutSuffix(spec, "d")
		w, err := strconv.Atoi(digits)
		if !ok || err != nil || digits[0] == '+' || digits[0] == '-' || w > 64 {
			return "", fmt.Errorf("field {%s}: unsupported format spec %q (only d, Nd and 0Nd)", field, spec)
		}
		pad := " "
		if digits[0] == '0' {
			pad = "0"
		}
		if len(s) < w {
			s = strings.Repeat(pad, w-len(s)) + s
		}
		return s, nil
	}
	return "", fmt.Errorf("field {%s}: unsupported value %v", field, v)
}

// knownFields lists the names of vals, sorted, for messages.
func knownFields(vals map[string]any) string {
	var names []string
	for k := range vals {
		names = append(names, "{"+k+"}")
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

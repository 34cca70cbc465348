package parquet

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/internal/jsonobj"
)

// HFKey is the parquet key-value metadata key under which Hugging Face
// datasets stores its features.
const HFKey = "huggingface"

// isMediaType reports whether a Hugging Face feature _type is stored as
// struct<bytes: binary, path: string>.
func isMediaType(t string) bool {
	switch t {
	case "Image", "Audio", "Video", "Pdf", "Nifti", "Mesh":
		return true
	}
	return false
}

// isListType reports whether a Hugging Face feature _type wraps a list.
func isListType(t string) bool {
	return t == "Sequence" || t == "List" || t == "LargeList"
}

// stringValue is the feature a reference column is declared as.
var stringValue = json.RawMessage(`{"dtype": "string", "_type": "Value"}`)

// member is one key of a JSON object, its value kept as written.
type member = jsonobj.Member

// parseObject splits a JSON object into its members in order. ok is false
// when raw is not exactly one JSON object.
func parseObject(raw []byte) (ms []member, ok bool) {
	ms, err := jsonobj.Parse(raw)
	return ms, err == nil
}

func find(ms []member, key string) int {
	for i, m := range ms {
		if m.Key == key {
			return i
		}
	}
	return -1
}

// typeOf returns a feature's "_type", or "".
func typeOf(ms []member) string {
	if i := find(ms, "_type"); i >= 0 {
		var s string
		if json.Unmarshal(ms[i].Value, &s) == nil {
			return s
		}
	}
	return ""
}

// listElem returns the element feature of a list feature (Sequence, List,
// LargeList, or the legacy one-element JSON array) and how to put a
// rewritten element back. ok is false for anything else.
func listElem(raw json.RawMessage) (elem json.RawMessage, spelling string, rebuild func(json.RawMessage) json.RawMessage, ok bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(trimmed, &arr) != nil || len(arr) != 1 {
			return nil, "", nil, false
		}
		return arr[0], "[]", func(e json.RawMessage) json.RawMessage {
			return append(append([]byte{'['}, e...), ']')
		}, true
	}
	ms, isObj := parseObject(trimmed)
	if !isObj {
		return nil, "", nil, false
	}
	t := typeOf(ms)
	fi := find(ms, "feature")
	if !isListType(t) || fi < 0 {
		return nil, "", nil, false
	}
	return ms[fi].Value, t, func(e json.RawMessage) json.RawMessage {
		out := append([]member(nil), ms...)
		out[fi].Value = e
		return jsonobj.Encode(out)
	}, true
}

// hfFeatures returns the "features" object of a huggingface metadata value.
func hfFeatures(meta string) (json.RawMessage, error) {
	top, ok := parseObject([]byte(meta))
	if !ok {
		return nil, errors.New("huggingface metadata is not a JSON object")
	}
	i := find(top, "info")
	if i < 0 {
		return nil, nil
	}
	info, ok := parseObject(top[i].Value)
	if !ok {
		return nil, errors.New("huggingface metadata: info is not a JSON object")
	}
	j := find(info, "features")
	if j < 0 {
		return nil, nil
	}
	return info[j].Value, nil
}

// featureAt returns the feature at a column path inside a features object:
// struct features are JSON objects without "_type", and list features are
// looked through, as columns paths do.
func featureAt(features json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := features
	for _, name := range path {
		for {
			elem, _, _, ok := listElem(cur)
			if !ok {
				break
			}
			cur = elem
		}
		ms, ok := parseObject(cur)
		if !ok || typeOf(ms) != "" {
			return nil, false
		}
		i := find(ms, name)
		if i < 0 {
			return nil, false
		}
		cur = ms[i].Value
	}
	return cur, true
}

// describeMedia names a media feature as people write it: "Image",
// "Sequence(Image)", "List(Audio)", "[Image]". It returns "" for features
// that are not media or lists of media.
func describeMedia(feature json.RawMessage) string {
	if elem, spelling, _, ok := listElem(feature); ok {
		inner := describeMedia(elem)
		if inner == "" {
			return ""
		}
		if spelling == "[]" {
			return "[" + inner + "]"
		}
		return spelling + "(" + inner + ")"
	}
	ms, ok := parseObject(feature)
	if !ok {
		return ""
	}
	if t := typeOf(ms); isMediaType(t) {
		return t
	}
	return ""
}

// rewriteFeatureAt replaces the feature at path (looking through list
// wrappers at the end, so Sequence and List keep their spelling) with
// {"dtype": "string", "_type": "Value"}. ok is false when the features do
// not have that path.
func rewriteFeatureAt(feature json.RawMessage, path []string) (json.RawMessage, bool) {
	if elem, _, rebuild, ok := listElem(feature); ok {
		e, ok := rewriteFeatureAt(elem, path)
		if !ok {
			return feature, false
		}
		return rebuild(e), true
	}
	if len(path) == 0 {
		return stringValue, true
	}
	ms, ok := parseObject(feature)
	if !ok || typeOf(ms) != "" {
		return feature, false
	}
	i := find(ms, path[0])
	if i < 0 {
		return feature, false
	}
	v, ok := rewriteFeatureAt(ms[i].Value, path[1:])
	if !ok {
		return feature, false
	}
	out := append([]member(nil), ms...)
	out[i].Value = v
	return jsonobj.Encode(out), true
}

// addSiblingAt adds, beside the media feature at path, the --keep-path
// feature: a string Value of the same list shape, named with PathSuffix.
// ok is false when the features do not have that path, or already have a
// feature of that name.
func addSiblingAt(features json.RawMessage, path []string) (json.RawMessage, bool) {
	if elem, _, rebuild, ok := listElem(features); ok {
		e, ok := addSiblingAt(elem, path)
		if !ok {
			return features, false
		}
		return rebuild(e), true
	}
	ms, ok := parseObject(features)
	if !ok || typeOf(ms) != "" || len(path) == 0 {
		return features, false
	}
	i := find(ms, path[0])
	if i < 0 {
		return features, false
	}
	out := append([]member(nil), ms...)
	if len(path) > 1 {
		v, ok := addSiblingAt(ms[i].Value, path[1:])
		if !ok {
			return features, false
		}
		out[i].Value = v
		return jsonobj.Encode(out), true
	}
	name := path[0] + PathSuffix
	if find(ms, name) >= 0 {
		return features, false
	}
	sib, _ := rewriteFeatureAt(ms[i].Value, nil)
	return jsonobj.Encode(slices.Insert(out, i+1, member{Key: name, Value: sib})), true
}

// editFeatures applies e to a features object: the string paths declared
// as string Values, the siblings added. changed is false when nothing
// applied.
func editFeatures(features json.RawMessage, e featureEdit) (json.RawMessage, bool) {
	changed := false
	for _, p := range e.strings {
		if nf, ok := rewriteFeatureAt(features, p); ok {
			features, changed = nf, true
		}
	}
	for _, p := range e.siblings {
		if nf, ok := addSiblingAt(features, p); ok {
			features, changed = nf, true
		}
	}
	return features, changed
}

// rewriteHF returns the huggingface metadata with e applied (see
// editFeatures). Keys and untouched values keep their order and spelling;
// metadata that declares no features, or none e changes, is returned as
// it is.
func rewriteHF(meta string, e featureEdit) (string, error) {
	top, ok := parseObject([]byte(meta))
	if !ok {
		return meta, errors.New("huggingface metadata is not a JSON object")
	}
	ii := find(top, "info")
	if ii < 0 {
		return meta, nil
	}
	info, ok := parseObject(top[ii].Value)
	if !ok {
		return meta, errors.New("huggingface metadata: info is not a JSON object")
	}
	fi := find(info, "features")
	if fi < 0 {
		return meta, nil
	}
	features, changed := editFeatures(info[fi].Value, e)
	if !changed {
		return meta, nil // nothing to change: keep the bytes
	}
	info[fi].Value = features
	top[ii].Value = jsonobj.Encode(info)
	return string(jsonobj.Encode(top)), nil
}

// dotted joins a column path for member keys.
func dotted(path []string) string { return strings.Join(path, ".") }

// FieldName renders a field path as plans and --field name it: names
// joined by dots, a dot or a backslash inside a name escaped with a
// backslash (obs.cam\.front is the field "cam.front" of "obs").
// ParseFieldPath reads it back.
func FieldName(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = strings.NewReplacer(`\`, `\\`, ".", `\.`).Replace(p)
	}
	return strings.Join(parts, ".")
}

// ParseFieldPath splits a field name written as FieldName writes it.
func ParseFieldPath(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) || (s[i+1] != '.' && s[i+1] != '\\') {
				return nil, errors.New(`a backslash must be followed by "." or "\" (an escaped dot or backslash)`)
			}
			i++
			b.WriteByte(s[i])
		case c == '.':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String()), nil
}

// quotePath renders a path for error messages.
func quotePath(path []string) string { return strconv.Quote(FieldName(path)) }

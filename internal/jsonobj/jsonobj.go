// Package jsonobj splits a JSON object into its members in the order they
// were written, values kept byte for byte, and writes members back as an
// object: for rewriting a few members of a metadata file (a dataset card's
// features, LeRobot's info.json) while every other member keeps its place
// and its spelling.
//
// It is not a JSON parser of its own: values are what encoding/json
// decodes as json.RawMessage. It holds no state.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Member is one key of a JSON object, its value kept as written.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Parse splits raw, which must be exactly one JSON object, into its
// members in order.
func Parse(raw []byte) ([]Member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []Member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("not a JSON object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		ms = append(ms, Member{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

// Encode writes members as a JSON object, spaced as Python's json.dumps
// spaces one: `{"a": 1, "b": 2}`.
func Encode(ms []Member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteString(": ")
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// omap is a JSON object that keeps its keys in insertion order, so the
// document renders (as JSON, YAML and HTML) in a stable, readable order.
// The document tree holds only *omap, []any, string, bool, nil,
// json.Number, int, int64 and float64.
type omap struct {
	keys []string
	m    map[string]any
}

func newMap() *omap { return &omap{m: map[string]any{}} }

// set adds or replaces k; a new key goes last.
func (o *omap) set(k string, v any) *omap {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
	return o
}

func (o *omap) get(k string) (any, bool) {
	v, ok := o.m[k]
	return v, ok
}

func (o *omap) del(k string) {
	if _, ok := o.m[k]; !ok {
		return
	}
	delete(o.m, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *omap) len() int { return len(o.keys) }

// MarshalJSON renders the object compactly with its keys in order.
func (o *omap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, o, "", ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// decodeOrdered decodes one JSON value keeping object key order; numbers
// stay json.Number.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("decode: trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("decode: object key is not a string")
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("decode: unexpected %v", t)
	default:
		return tok, nil // string, json.Number, bool, nil
	}
}

// toValue converts any JSON-marshalable Go value into the ordered tree.
func toValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeOrdered(b)
}

// writeJSON writes v; with indent != "" it is pretty-printed.
func writeJSON(b *bytes.Buffer, v any, prefix, indent string) error {
	nl := func(depth string) {
		if indent != "" {
			b.WriteByte('\n')
			b.WriteString(depth)
		}
	}
	switch x := v.(type) {
	case *omap:
		if x.len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		inner := prefix + indent
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(inner)
			writeString(b, k)
			b.WriteByte(':')
			if indent != "" {
				b.WriteByte(' ')
			}
			if err := writeJSON(b, x.m[k], inner, indent); err != nil {
				return err
			}
		}
		nl(prefix)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		inner := prefix + indent
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(inner)
			if err := writeJSON(b, e, inner, indent); err != nil {
				return err
			}
		}
		nl(prefix)
		b.WriteByte(']')
	default:
		s, err := scalarText(v)
		if err != nil {
			return err
		}
		b.WriteString(s)
	}
	return nil
}

// scalarText renders a scalar as JSON text (also valid YAML 1.2).
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		var b bytes.Buffer
		writeString(&b, x)
		return b.String(), nil
	case json.Number:
		return x.String(), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("unsupported number %v", x)
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("unsupported value of type %T", v)
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode appends a newline
}

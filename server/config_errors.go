package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablegate/tablegate/internal/suggest"
)

// explainJSONError turns an error of decoding data into a value of type t
// (with unknown fields disallowed) into one that says where: the line and
// column, the key path, and for an unknown key the nearest known one and
// the keys allowed there.
func explainJSONError(data []byte, err error, t reflect.Type) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		msg := syn.Error()
		switch {
		case strings.Contains(msg, "after object key:value pair"), strings.Contains(msg, "after array element"):
			msg += " (a missing comma?)"
		case strings.Contains(msg, "looking for beginning of object key string"):
			msg += " (a trailing comma, or a key without quotes?)"
		}
		return fmt.Errorf("%s: %s", position(data, syn.Offset-1), msg) // Offset is past the offending byte
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%s: the file ends inside a value (an unclosed { or [, or an empty file?)", position(data, int64(len(data))))
	case errors.As(err, &typ):
		where, at := typ.Field, typ.Offset
		if path, start, ok := locateValue(data, typ.Offset); ok {
			where, at = path, start // Field leaves out map keys
		}
		if where == "" {
			where = "the top level"
		}
		return fmt.Errorf("%s: %s is a JSON %s, but it must be %s", position(data, at), where, typ.Value, jsonKind(typ.Type))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		if u := findUnknownKey(data, t); u != nil {
			in := "at the top level"
			if u.path != "" {
				in = "in " + u.path
			}
			return fmt.Errorf("%s: unknown key %q %s%s; the keys there are %s",
				position(data, u.offset), u.key, in, suggest.DidYouMean(u.key, u.known), strings.Join(u.known, ", "))
		}
	}
	return err
}

// position names the line and column (1-based, in characters) of byte
// offset off of data.
func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// jsonKind says what JSON a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another type"
}

// unknownKey is a key of a JSON object that the Go type read from it has
// no field for.
type unknownKey struct {
	path   string   // the object's key path: tables.todos ("" at the top)
	key    string   // the unknown key
	offset int64    // where the key starts in the file
	known  []string // the keys the object may hold
}

// findUnknownKey walks data as type t and returns the first key that no
// field of t's structs takes (matched as encoding/json matches them,
// case-insensitively), or nil.
func findUnknownKey(data []byte, t reflect.Type) *unknownKey {
	w := &keyWalker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	u, _ := w.value(t, "")
	return u
}

type keyWalker struct {
	data []byte
	dec  *json.Decoder
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// value reads one value as type t at path; it stops at the first unknown
// key (or a read error: the decoder already reported that one).
func (w *keyWalker) value(t reflect.Type, path string) (*unknownKey, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil, w.skip()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		if tok != json.Delim('{') {
			return nil, w.skipRest(tok)
		}
		var known []string
		if t.Kind() == reflect.Struct {
			known = jsonFields(t)
		}
		for w.dec.More() {
			tok, err := w.dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := tok.(string)
			end := w.dec.InputOffset()
			sub := key
			if path != "" {
				sub = path + "." + key
			}
			var elem reflect.Type
			if t.Kind() == reflect.Map {
				elem = t.Elem()
			} else if f, ok := fieldFor(t, key); ok {
				elem = f.Type
			} else {
				return &unknownKey{path: path, key: key, offset: keyStart(w.data, end), known: known}, nil
			}
			if u, err := w.value(elem, sub); u != nil || err != nil {
				return u, err
			}
		}
		_, err = w.dec.Token() // }
		return nil, err
	case reflect.Slice, reflect.Array:
		tok, err := w.dec.Token()
		if err != nil {
			return nil, err
		}
		if tok != json.Delim('[') {
			return nil, w.skipRest(tok)
		}
		for i := 0; w.dec.More(); i++ {
			if u, err := w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]"); u != nil || err != nil {
				return u, err
			}
		}
		_, err = w.dec.Token() // ]
		return nil, err
	}
	return nil, w.skip()
}

// skip reads one whole value.
func (w *keyWalker) skip() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	return w.skipRest(tok)
}

// skipRest reads the rest of the value that tok opened.
func (w *keyWalker) skipRest(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// keyStart finds the opening quote of the key string that ends just
// before byte end.
func keyStart(data []byte, end int64) int64 {
	i := min(end, int64(len(data))) - 2 // before the closing quote
	for ; i >= 0; i-- {
		if data[i] == '"' && (i == 0 || data[i-1] != '\\') {
			return i
		}
	}
	return max(end-1, 0)
}

// jsonFields lists the JSON keys of a struct's exported fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name, ok := jsonName(f); ok {
			out = append(out, name)
		}
	}
	return out
}

// fieldFor finds the field of struct t that takes key: its JSON name
// exactly, else case-insensitively (as encoding/json does).
func fieldFor(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold reflect.StructField
	found := false
	for f := range t.Fields() {
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if name == key {
			return f, true
		}
		if !found && strings.EqualFold(name, key) {
			fold, found = f, true
		}
	}
	return fold, found
}

func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

// locateValue finds the value of data that ends at byte end (the offset
// encoding/json reports with a type error): its key path and where it
// starts.
func locateValue(data []byte, end int64) (path string, start int64, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string, depth int) bool
	walk = func(p string, depth int) bool {
		if depth > 10000 {
			return false
		}
		from := valueStart(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return false
				}
				key, _ := kt.(string)
				sub := key
				if p != "" {
					sub = p + "." + key
				}
				if walk(sub, depth+1) {
					return true
				}
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if walk(p+"["+strconv.Itoa(i)+"]", depth+1) {
					return true
				}
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
		}
		if dec.InputOffset() == end {
			path, start, ok = p, from, true
			return true
		}
		return false
	}
	walk("", 0)
	return path, start, ok
}

// valueStart skips the separators (space, colon, comma) from byte i.
func valueStart(data []byte, i int64) int64 {
	for i < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[i]) >= 0 {
		i++
	}
	return i
}

package ssrcookie

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EncodeJSON marshals v with encoding/json and rewrites the result as
// JavaScript's JSON.stringify would print the same value: no HTML escaping
// (<, >, & stay literal), U+2028 and U+2029 unescaped, control characters
// as \b \f \n \r \t or lowercase \u00xx, numbers in JavaScript's shortest
// form (1e+21, 1.5e-7, integers beyond 2^53 rounded like a double),
// integer-like object keys first in ascending order and later duplicate
// keys replacing earlier ones in place, as a JavaScript object does.
//
// Stored session cookies hold exactly such text, so EncodeJSON of a
// session gives the bytes @supabase/ssr would have written.
func EncodeJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return StringifyJSON(raw)
}

// StringifyJSON returns JSON.stringify(JSON.parse(raw)): raw re-printed
// with the rules of [EncodeJSON]. It fails on invalid JSON. Lone UTF-16
// surrogate escapes ("\ud800") become U+FFFD, where JavaScript would keep
// them; GoTrue never sends them.
func StringifyJSON(raw []byte) ([]byte, error) {
	v, err := parseJS(raw)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	writeValue(&b, v)
	return b.Bytes(), nil
}

func validJSON(b []byte) bool { return json.Valid(b) }

// parseJS parses raw like JSON.parse: objects keep JavaScript property
// order, numbers stay exact.
func parseJS(raw []byte) (any, error) {
	if !validJSON(raw) {
		return nil, errors.New("ssrcookie: invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return readValue(dec)
}

// jsObject is an object with JavaScript property order.
type jsObject struct {
	keys []string
	vals map[string]any
}

func readValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsObject{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			sortJSKeys(o.keys)
			return o, nil
		case '[':
			var a []any
			for dec.More() {
				v, err := readValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if a == nil {
				a = []any{}
			}
			return a, nil
		}
		return nil, fmt.Errorf("ssrcookie: unexpected %v", t)
	case nil, bool, string, json.Number:
		return t, nil
	}
	return nil, io.ErrUnexpectedEOF
}

// arrayIndex reports whether k is a canonical array index ("0" …
// "4294967294"), which JavaScript objects order first, ascending.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n > math.MaxUint32-1 {
		return 0, false
	}
	return n, true
}

func sortJSKeys(keys []string) {
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, aok := arrayIndex(a)
		ib, bok := arrayIndex(b)
		switch {
		case aok && bok:
			return int(int64(ia) - int64(ib))
		case aok:
			return -1
		case bok:
			return 1
		}
		return 0
	})
}

func writeValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		writeString(b, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			b.WriteString("null")
			return
		}
		b.WriteString(jsNumber(f))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case *jsObject:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeValue(b, v.vals[k])
		}
		b.WriteByte('}')
	}
}

// writeString quotes s like JSON.stringify (QuoteJSONString).
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString("\ufffd")
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}

// jsNumber formats f like JavaScript's Number.prototype.toString.
func jsNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null" // what JSON.stringify prints for them
	}
	if f == 0 {
		return "0"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±x
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, expPart, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	k, n := len(digits), exp+1
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		e := n - 1
		sign := "+"
		if e < 0 {
			sign, e = "-", -e
		}
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		out += "e" + sign + strconv.Itoa(e)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// TokensOnly returns the session JSON raw without its "user" member, the
// value @supabase/ssr 0.12 stores with cookies.encode "tokens-only" (the
// other members keep their order and JavaScript printing). raw must be a
// JSON object; a session without user is returned re-printed unchanged.
func TokensOnly(raw []byte) ([]byte, error) {
	v, err := parseJS(raw)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(*jsObject)
	if !ok {
		return nil, errors.New("ssrcookie: session is not a JSON object")
	}
	if _, has := obj.vals["user"]; has {
		delete(obj.vals, "user")
		obj.keys = slices.DeleteFunc(obj.keys, func(k string) bool { return k == "user" })
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	writeValue(&b, obj)
	return b.Bytes(), nil
}

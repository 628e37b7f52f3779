package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// renderPage writes a raw page without decoding its rows.
func (r *Resource) renderPage(rp *RawPage, lq *ListQuery) ([]byte, error) {
	n := len(rp.ItemsJSON) + 40
	for _, it := range rp.Items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n+128)
	b = append(b, `{"items":`...)
	if rp.ItemsJSON != nil {
		b = append(b, rp.ItemsJSON...)
	} else {
		b = append(b, '[')
		for i, it := range rp.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, it...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"next_cursor":`...)
	if rp.Next != nil {
		cur, err := r.signCursor(lq, rp.Next)
		if err != nil {
			return nil, err
		}
		b = strconv.AppendQuote(b, cur)
	} else {
		b = append(b, "null"...)
	}
	if rp.Count != nil {
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, *rp.Count, 10)
	}
	return append(b, '}'), nil
}

// marshal renders a hook or action output.
func marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return x, nil
	case RowJSON: // byte for byte as GET renders the row (json.Marshal would compact it)
		if len(x) == 0 {
			return []byte("null"), nil
		}
		return x, nil
	case nil:
		return []byte("null"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, hookErr(fmt.Errorf("encode response: %w", err))
	}
	return b, nil
}

// decodeJSON decodes one JSON value with numbers kept exact.
func decodeJSON(b []byte) (any, error) {
	// encoding/json would store U+FFFD for invalid UTF-8: refuse it
	// instead of changing the caller's data.
	if !utf8.Valid(b) {
		return nil, badBody("The body is not valid UTF-8.")
	}
	if msg := badEscape(b, false); msg != "" {
		return nil, badBody(msg)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badBody("The body is not valid JSON.")
	}
	if dec.More() {
		return nil, badBody("The body holds more than one JSON value.")
	}
	if _, err := dec.Token(); err == nil {
		return nil, badBody("The body holds more than one JSON value.")
	}
	return v, nil
}

// badEscape names the first \u escape in the JSON text b that no text
// can hold — a UTF-16 surrogate that is not half of a high-low pair
// (encoding/json would store U+FFFD), or with nul a NUL, which Postgres
// text and jsonb values cannot hold — or returns "". Backslashes are only
// valid inside strings, so b is scanned without tracking them.
func badEscape(b []byte, nul bool) string {
	for i := nextBackslash(b, 0); i >= 0 && i+1 < len(b); {
		if b[i+1] != 'u' {
			i = nextBackslash(b, i+2) // \\, \" and the other one-letter escapes
			continue
		}
		r := hex4(b[i+2:])
		switch {
		case r == 0 && nul:
			return "The body holds a NUL character (\\u0000), which no text column can hold."
		case r >= 0xD800 && r < 0xDC00:
			if len(b) >= i+12 && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo := hex4(b[i+8:]); lo >= 0xDC00 && lo < 0xE000 {
					i = nextBackslash(b, i+12)
					continue
				}
			}
			return "The body holds half of a UTF-16 surrogate pair (\\uD800–\\uDFFF alone), which no text can hold."
		case r >= 0xDC00 && r < 0xE000:
			return "The body holds half of a UTF-16 surrogate pair (\\uD800–\\uDFFF alone), which no text can hold."
		}
		i = nextBackslash(b, i+2)
	}
	return ""
}

// nextBackslash is the index of the first backslash in b at or after
// from, or -1.
func nextBackslash(b []byte, from int) int {
	if from >= len(b) {
		return -1
	}
	if j := bytes.IndexByte(b[from:], '\\'); j >= 0 {
		return from + j
	}
	return -1
}

// hex4 is the value of the four hex digits at the start of b, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

// decodeItems decodes the rows of a repository page.
func decodeItems(rp *RawPage) ([]Row, error) {
	if rp.ItemsJSON != nil {
		dec := json.NewDecoder(bytes.NewReader(rp.ItemsJSON))
		dec.UseNumber()
		var rows []Row
		if err := dec.Decode(&rows); err != nil {
			return nil, fmt.Errorf("decode page: %w", err)
		}
		if rows == nil {
			rows = []Row{}
		}
		return rows, nil
	}
	rows := make([]Row, 0, len(rp.Items))
	for _, raw := range rp.Items {
		row, err := decodeRow(raw)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// decodeRow decodes a row produced by the repository.
func decodeRow(raw json.RawMessage) (Row, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode row: %w", err)
	}
	return Row(m), nil
}

// keyOf extracts the key's text from a row, "" when not selected.
func (r *Resource) keyOf(raw json.RawMessage) string {
	if _, ok := r.selName[r.key.Name]; !ok {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	v := m[r.key.Name]
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String()
	}
	return ""
}

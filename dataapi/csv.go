package dataapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
)

// wantsCSV reports Accept: text/csv.
func (q *request) wantsCSV() bool {
	return strings.Contains(q.r.Header.Get("Accept"), "text/csv")
}

// toCSV renders a JSON array of objects as CSV: a header of the first
// row's keys, then one line per row; null is an empty field, strings are
// their text, other values their JSON.
func toCSV(body string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var rows []json.RawMessage
	if err := dec.Decode(&rows); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for i, raw := range rows {
		keys, vals, err := orderedObject(raw)
		if err != nil {
			return "", err
		}
		if i == 0 {
			if err := w.Write(keys); err != nil {
				return "", err
			}
		}
		if err := w.Write(vals); err != nil {
			return "", err
		}
	}
	w.Flush()
	return buf.String(), w.Error()
}

// orderedObject reads an object's keys in order and its values as CSV
// fields.
func orderedObject(raw json.RawMessage) ([]string, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return nil, nil, err
	}
	var keys, vals []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		switch {
		case string(v) == "null":
			vals = append(vals, "")
		case len(v) > 0 && v[0] == '"':
			var s string
			_ = json.Unmarshal(v, &s)
			vals = append(vals, s)
		default:
			vals = append(vals, string(v))
		}
	}
	return keys, vals, nil
}

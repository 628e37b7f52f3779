package dataapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// csvRows reads a text/csv body as PostgREST does: a header line naming
// the columns, then one line per row, each field its column's text (cast
// by Postgres to the column's type); the unquoted or quoted text NULL is
// null, an empty field the empty string.
func (q *request) csvRows() ([]map[string]any, *Error) {
	raw, err := io.ReadAll(http.MaxBytesReader(q.w, q.r.Body, MaxBodyBytes))
	if err != nil {
		return nil, apiErr(http.StatusRequestEntityTooLarge, "PGRST102", "The body is larger than "+strconv.Itoa(MaxBodyBytes)+" bytes or could not be read")
	}
	rd := csv.NewReader(bytes.NewReader(raw))
	recs, err := rd.ReadAll()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			return nil, apiErr(http.StatusBadRequest, "PGRST102", "All lines must have same number of fields")
		}
		return nil, apiErr(http.StatusBadRequest, "PGRST102", "Empty or invalid csv").withDetails(err.Error())
	}
	if len(recs) == 0 {
		return nil, apiErr(http.StatusBadRequest, "PGRST102", "Empty or invalid csv")
	}
	header := recs[0]
	rows := make([]map[string]any, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		row := make(map[string]any, len(header))
		for i, name := range header {
			if rec[i] == "NULL" {
				row[name] = nil
			} else {
				row[name] = rec[i]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

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

package rest

import (
	"bytes"
	"sort"
	"strconv"

	"github.com/tablegate/tablegate/problem"
)

// parseKey checks the raw key against the key column's type: integer keys
// become int64, uuid keys must be canonical or compact hex, others stay text.
func (r *Resource) parseKey(s string) (any, error) {
	if s == "" {
		return nil, badKey(r.key.Name, "present")
	}
	switch r.keyKind {
	case keyInt:
		bits := 64
		switch r.key.TypeName {
		case "int2":
			bits = 16
		case "int4":
			bits = 32
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, badKey(r.key.Name, "an integer of "+strconv.Itoa(bits)+" bits")
		}
		return n, nil
	case keyUUID:
		if !validUUID(s) {
			return nil, badKey(r.key.Name, "a UUID")
		}
	}
	return s, nil
}

func validUUID(s string) bool {
	switch len(s) {
	case 36:
		for i := 0; i < 36; i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
				continue
			}
			if !isHex(c) {
				return false
			}
		}
		return true
	case 32:
		for i := 0; i < 32; i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseBody decodes a create or update body: a JSON object naming only
// writable columns, valid against the operation's input schema.
func (r *Resource) parseBody(op Operation, body []byte) (Row, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badBody("A JSON object body is required.")
	}
	v, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	if msg := badEscape(body, true); msg != "" {
		return nil, badBody(msg)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badBody("The body must be a JSON object.")
	}
	row := Row(m)
	var errs, textErrs, fitErrs []problem.FieldError
	for k := range row {
		c, ok := r.byName[k]
		switch {
		case !ok:
			errs = append(errs, problem.FieldError{Path: "/" + pointerEscape(k), Message: "is not a column"})
		case c.ReadOnly || (op == OpUpdate && c == r.key):
			errs = append(errs, problem.FieldError{Path: "/" + pointerEscape(k), Message: "is read-only"})
		case c.textIn && !isText(row[k], c.textArrays):
			textErrs = append(textErrs, problem.FieldError{Path: "/" + pointerEscape(k),
				Message: "must be the " + c.Type + " text form (a string, or an array of them)"})
		case r.input[op] == nil && c.fit != 0:
			// Without an input schema the column's type decides: "yes"
			// is no boolean, though Postgres would read it as true.
			if path, msg := c.misfit(row[k]); msg != "" {
				fitErrs = append(fitErrs, problem.FieldError{Path: "/" + pointerEscape(k) + path, Message: msg})
			}
		}
	}
	if errs != nil {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
		p := problem.New(problem.KindBadRequest, "The body names unknown or read-only columns.")
		return nil, withFieldErrors(p, errs)
	}
	if fitErrs != nil {
		sort.Slice(fitErrs, func(i, j int) bool { return fitErrs[i].Path < fitErrs[j].Path })
		p := problem.New(problem.KindBadRequest, "The body gives values whose JSON type does not fit their column's type.")
		return nil, withFieldErrors(p, fitErrs)
	}
	if textErrs != nil {
		sort.Slice(textErrs, func(i, j int) bool { return textErrs[i].Path < textErrs[j].Path })
		return nil, schemaFailed("body", textErrs)
	}
	if v := r.input[op]; v != nil {
		if errs := v.check(map[string]any(row)); errs != nil {
			return nil, schemaFailed("body", errs)
		}
	}
	if op == OpUpdate && len(row) == 0 && r.hooks.BeforeUpdateFunc == nil {
		return nil, badBody("The body sets no column.")
	}
	return row, nil
}

package rest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// A cursor is base64url(JSON array of the last row's order values) "."
// base64url(HMAC-SHA256(key, table, canonical filters and order, payload)
// truncated to 128 bits). It is opaque to clients, tamper-evident, and
// valid only for the query (filters and order) that produced it; a
// different limit is fine. Keyset pagination keeps it stable under inserts.

const cursorMACLen = 16

func (r *Resource) cursorMAC(lq *ListQuery, payload []byte) []byte {
	m := hmac.New(sha256.New, r.cursorKey)
	m.Write([]byte(r.table))
	m.Write([]byte{0})
	m.Write([]byte(lq.canon))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:cursorMACLen]
}

// signCursor encodes the order values of the last row.
func (r *Resource) signCursor(lq *ListQuery, next []any) (string, error) {
	if len(next) != len(lq.Order) {
		return "", fmt.Errorf("repository returned %d cursor values for %d order terms", len(next), len(lq.Order))
	}
	payload, err := json.Marshal(next)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(r.cursorMAC(lq, payload)), nil
}

// openCursor verifies a cursor against the query and returns its values.
func (r *Resource) openCursor(lq *ListQuery, s string) ([]any, error) {
	bad := badParam(paramCursor, "is not a valid cursor for this query")
	i := bytes.IndexByte([]byte(s), '.')
	if i < 0 || len(s) > 16<<10 {
		return nil, bad
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(s[:i])
	mac, err2 := enc.DecodeString(s[i+1:])
	if err1 != nil || err2 != nil || !hmac.Equal(mac, r.cursorMAC(lq, payload)) {
		return nil, bad
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var vals []any
	if err := dec.Decode(&vals); err != nil || len(vals) != len(lq.Order) {
		return nil, bad
	}
	return vals, nil
}

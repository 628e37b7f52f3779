package rest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tablegate/tablegate/authctx"
)

// A cursor is base64url(nonce) "." base64url(AES-256-GCM sealed JSON array
// of the last row's order values), with the table and the canonical
// filters and order and the caller (cursorBinding) as additional data. It
// is opaque to clients (the
// values are encrypted: the last row of a page may be one the authorizer
// dropped, and the key is in the cursor even when it is not selected),
// tamper-evident, and valid only for the caller and the query (filters
// and order) that produced it; a different limit is fine. Keyset pagination keeps it
// stable under inserts.

// newCursorAEAD derives the cursor cipher from Config.CursorKey.
func newCursorAEAD(key []byte) cipher.AEAD {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("tablegate list cursor v2"))
	block, err := aes.NewCipher(m.Sum(nil)) // 32 bytes: AES-256
	if err != nil {
		panic("rest: cursor cipher: " + err.Error()) // cannot happen with a 32-byte key
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("rest: cursor cipher: " + err.Error())
	}
	return aead
}

// cursorAD is the additional data that binds a cursor to its query and
// its caller.
func (r *Resource) cursorAD(lq *ListQuery) []byte {
	ad := make([]byte, 0, len(r.table)+2+len(lq.canon)+len(lq.bind))
	ad = append(ad, r.table...)
	ad = append(ad, 0)
	ad = append(ad, lq.canon...)
	ad = append(ad, 0)
	return append(ad, lq.bind...)
}

// cursorBinding names the caller a cursor is sealed to: actor kind and
// id, the role claim and the active tenant (claim tenant_id, else
// app_metadata.tenant_id). Another caller replaying the cursor — another
// user, the same user in another role or tenant — gets 400, never rows
// positioned by values it cannot see.
func cursorBinding(c authctx.Auth) string {
	role, _ := c.Claims()["role"].(string)
	b, _ := json.Marshal([]string{string(c.Actor().Type), c.Actor().ID, role, c.Claims().TenantID()})
	return string(b)
}

// signCursor seals the order values of the last row.
func (r *Resource) signCursor(lq *ListQuery, next []any) (string, error) {
	if len(next) != len(lq.Order) {
		return "", fmt.Errorf("repository returned %d cursor values for %d order terms", len(next), len(lq.Order))
	}
	payload, err := json.Marshal(next)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	nonce := make([]byte, r.cursorAEAD.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("cursor nonce: %w", err)
	}
	sealed := r.cursorAEAD.Seal(nil, nonce, payload, r.cursorAD(lq))
	enc := base64.RawURLEncoding
	return enc.EncodeToString(nonce) + "." + enc.EncodeToString(sealed), nil
}

// openCursor verifies a cursor against the query and returns its values.
func (r *Resource) openCursor(lq *ListQuery, s string) ([]any, error) {
	bad := badParam(paramCursor, "is not a valid cursor for this query")
	n, c, ok := strings.Cut(s, ".")
	if !ok || len(s) > 16<<10 {
		return nil, bad
	}
	enc := base64.RawURLEncoding
	nonce, err1 := enc.DecodeString(n)
	sealed, err2 := enc.DecodeString(c)
	if err1 != nil || err2 != nil || len(nonce) != r.cursorAEAD.NonceSize() {
		return nil, bad
	}
	payload, err := r.cursorAEAD.Open(nil, nonce, sealed, r.cursorAD(lq))
	if err != nil {
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

package gotrue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// FuzzSuccessBody feeds arbitrary 2xx bodies to the session parser: it
// never panics, and a Success always carries a session that ssrcookie
// parses and that is printed like JSON.stringify (a fixed point).
func FuzzSuccessBody(f *testing.F) {
	f.Add(sessionBody)
	f.Add(`{"access_token":"a","expires_in":1,"refresh_token":"r"}`)
	f.Add(`{"access_token":"a","expires_in":1e400,"refresh_token":"r","expires_at":null}`)
	f.Add(`{"access_token":"a","expires_in":-1,"refresh_token":"r","expires_at":false,"1":2}`)
	f.Add(`[]`)
	f.Add(`{"access_token":"a","expires_in":"1","refresh_token":"r"}`)
	f.Fuzz(func(t *testing.T, body string) {
		res := success([]byte(body), 200, time.Unix(1700000000, 0))
		if res.Outcome != Success {
			if res.Err == nil || res.Session != nil {
				t.Fatalf("failed result without error or with a session: %+v", res)
			}
			return
		}
		if !json.Valid(res.Session) {
			t.Fatalf("invalid session JSON %q", res.Session)
		}
		if _, err := ssrcookie.ParseSession(res.Session); err != nil {
			t.Fatalf("session does not parse: %v", err)
		}
		again, err := ssrcookie.StringifyJSON(res.Session)
		if err != nil || string(again) != string(res.Session) {
			t.Fatalf("not a fixed point: %q vs %q", again, res.Session)
		}
	})
}

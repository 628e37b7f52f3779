package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDemoAuthServerRotation(t *testing.T) {
	t.Parallel()
	ks := testKeySet(t, algES256)
	now := time.Unix(1_800_000_000, 0)
	s := newDemoAuthServer(ks, "http://demo/auth/v1", "sb_publishable_test")
	s.now = func() time.Time { return now }
	_, rt1, err := s.signIn(tokenSpec{Sub: demoUserID, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	call := func(tok string) (int, map[string]any) {
		req := httptest.NewRequest("POST", "/auth/v1/token?grant_type=refresh_token", strings.NewReader(`{"refresh_token":"`+tok+`"}`))
		req.Header.Set("apikey", "sb_publishable_test")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	code, m := call(rt1)
	rt2, _ := m["refresh_token"].(string)
	if code != http.StatusOK || rt2 == "" || rt2 == rt1 || m["expires_in"] != float64(60) {
		t.Fatalf("first refresh: %d %v", code, m)
	}
	now = now.Add(9 * time.Second)
	if code, m := call(rt1); code != 200 || m["refresh_token"] != rt2 {
		t.Fatalf("reuse inside the interval: %d %v", code, m)
	}
	now = now.Add(2 * time.Second)
	if code, m := call(rt1); code != 400 || m["code"] != "refresh_token_already_used" {
		t.Fatalf("reuse after the interval: %d %v", code, m)
	}
	// The reuse revoked the whole session, the current token included.
	if code, m := call(rt2); code != 400 || m["code"] != "session_not_found" {
		t.Fatalf("current token after revocation: %d %v", code, m)
	}
	if code, _ := call(""); code != 400 {
		t.Fatalf("empty token: %d", code)
	}
	for key, want := range map[string]int{"": 401, "sb_publishable_wrong": 401} {
		req := httptest.NewRequest("POST", "/auth/v1/token?grant_type=refresh_token", strings.NewReader(`{"refresh_token":"x"}`))
		if key != "" {
			req.Header.Set("apikey", key)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("apikey %q: %d", key, w.Code)
		}
	}
}

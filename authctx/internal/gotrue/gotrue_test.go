package gotrue

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const sessionBody = `{"access_token":"a.b.c","token_type":"bearer","expires_in":3600,"expires_at":1700003600,"refresh_token":"newrefresh123","user":{"id":"u1","email":"a\u003cb@example.com","user_metadata":{"name":"Zoë"}}}`

func TestRefreshRequestMatchesAuthJS(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, sessionBody)
	}))
	defer srv.Close()
	c := &Client{ProjectURL: srv.URL + "/", APIKey: "sb_publishable_TESTKEY"}
	res := c.Refresh(context.Background(), "abcdefghijkl", time.Unix(1700000000, 0))
	if res.Outcome != Success || res.Err != nil {
		t.Fatalf("outcome %v: %v", res.Outcome, res.Err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/auth/v1/token" || got.URL.RawQuery != "grant_type=refresh_token" {
		t.Fatalf("request %s %s", got.Method, got.URL)
	}
	want := map[string]string{
		"Apikey":                 "sb_publishable_TESTKEY",
		"Authorization":          "Bearer sb_publishable_TESTKEY",
		"Content-Type":           "application/json;charset=UTF-8",
		"X-Supabase-Api-Version": "2024-01-01",
		"X-Client-Info":          DefaultClientInfo,
	}
	for k, v := range want {
		if got.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if body != `{"refresh_token":"abcdefghijkl"}` {
		t.Errorf("body %s", body)
	}
	// Stored like JSON.stringify(JSON.parse(body)): \u003c becomes <.
	wantSession := strings.Replace(sessionBody, `\u003c`, "<", 1)
	if string(res.Session) != wantSession {
		t.Errorf("session\n got %s\nwant %s", res.Session, wantSession)
	}
	if res.Parsed.AccessToken != "a.b.c" || res.Parsed.RefreshToken != "newrefresh123" || res.Parsed.ExpiresAt != 1700003600 {
		t.Errorf("parsed %+v", res.Parsed)
	}
}

func TestRefreshOutcomes(t *testing.T) {
	t.Parallel()
	type answer struct {
		status  int
		headers map[string]string
		body    string
	}
	tests := []struct {
		name    string
		answer  answer
		outcome Outcome
		code    string
		session string
	}{
		{"success", answer{200, nil, sessionBody}, Success, "", ""},
		{"expires_at added last when absent", answer{200, nil, `{"access_token":"a","token_type":"bearer","expires_in":3600,"refresh_token":"r"}`}, Success, "",
			`{"access_token":"a","token_type":"bearer","expires_in":3600,"refresh_token":"r","expires_at":1700003601}`},
		{"expires_at 0 replaced in place", answer{200, nil, `{"access_token":"a","expires_at":0,"expires_in":60,"refresh_token":"r"}`}, Success, "",
			`{"access_token":"a","expires_at":1700000061,"expires_in":60,"refresh_token":"r"}`},
		{"not found", answer{400, map[string]string{"X-Supabase-Api-Version": "2024-01-01", "X-Sb-Error-Code": "refresh_token_not_found"}, `{"code":"refresh_token_not_found","message":"Invalid Refresh Token: Refresh Token Not Found"}`}, Rejected, "refresh_token_not_found", ""},
		{"already used", answer{400, map[string]string{"X-Supabase-Api-Version": "2024-01-01"}, `{"code":"refresh_token_already_used","message":"Invalid Refresh Token: Already Used"}`}, Rejected, "refresh_token_already_used", ""},
		{"session not found", answer{400, map[string]string{"X-Supabase-Api-Version": "2024-01-01"}, `{"code":"session_not_found","message":"x"}`}, Rejected, "session_not_found", ""},
		{"legacy body", answer{400, nil, `{"code":400,"error_code":"refresh_token_not_found","msg":"Invalid Refresh Token"}`}, Rejected, "refresh_token_not_found", ""},
		{"header code only", answer{400, map[string]string{"X-Sb-Error-Code": "session_expired"}, `not json`}, Rejected, "session_expired", ""},
		{"gateway 401", answer{401, nil, `{"message":"Invalid API key"}`}, Rejected, "", ""},
		{"rate limited", answer{429, map[string]string{"X-Supabase-Api-Version": "2024-01-01"}, `{"code":"over_request_rate_limit"}`}, Failed, "over_request_rate_limit", ""},
		{"500", answer{500, nil, `{"code":500,"error_code":"unexpected_failure","msg":"x","error_id":"e"}`}, Failed, "unexpected_failure", ""},
		{"503 html", answer{503, nil, `<html>down</html>`}, Failed, "", ""},
		{"200 not JSON", answer{200, nil, `<html>ok</html>`}, Failed, "", ""},
		{"200 array", answer{200, nil, `["a","b"]`}, Failed, "", ""},
		{"200 missing refresh_token", answer{200, nil, `{"access_token":"a","expires_in":3600}`}, Failed, "", ""},
		{"200 missing expires_in", answer{200, nil, `{"access_token":"a","refresh_token":"r"}`}, Failed, "", ""},
		{"200 wrong types", answer{200, nil, `{"access_token":1,"refresh_token":"r","expires_in":"x"}`}, Failed, "", ""},
		{"200 truncated", answer{200, nil, `{"access_token":"a","refresh_token":"r","expires_in":3600`}, Failed, "", ""},
		{"302", answer{302, nil, ``}, Failed, "", ""},
		{"huge body", answer{200, nil, `{"access_token":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `","refresh_token":"r","expires_in":1}`}, Failed, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.answer.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.answer.status)
				io.WriteString(w, tc.answer.body)
			}))
			defer srv.Close()
			c := &Client{ProjectURL: srv.URL, APIKey: "k"}
			res := c.Refresh(context.Background(), "secret-refresh-token", time.UnixMilli(1700000000600))
			if res.Outcome != tc.outcome || res.Code != tc.code {
				t.Fatalf("outcome %v code %q (err %v), want %v %q", res.Outcome, res.Code, res.Err, tc.outcome, tc.code)
			}
			if (res.Outcome == Success) != (res.Session != nil) || (res.Outcome != Success) != (res.Err != nil) {
				t.Fatalf("inconsistent result %+v", res)
			}
			if tc.session != "" && string(res.Session) != tc.session {
				t.Fatalf("session\n got %s\nwant %s", res.Session, tc.session)
			}
			if res.Err != nil && strings.Contains(res.Err.Error(), "secret-refresh-token") {
				t.Fatal("error leaks the refresh token")
			}
		})
	}
}

func TestRefreshTimeoutAndNetworkFailure(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := (&Client{ProjectURL: slow.URL, APIKey: "k"}).Refresh(ctx, "r", time.Now())
	if res.Outcome != Failed || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("slow server: %v %v", res.Outcome, res.Err)
	}
	// The server answers only when the test ends: any bound shows the
	// timeout applied; a generous one keeps a loaded machine green.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("timeout took %v", d)
	}

	// A server that sends headers, then stalls the body.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, `{"access_token":"a",`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stall.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel2()
	if res := (&Client{ProjectURL: stall.URL, APIKey: "k"}).Refresh(ctx2, "r", time.Now()); res.Outcome != Failed {
		t.Fatalf("stalled body: %v", res.Outcome)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	if res := (&Client{ProjectURL: url, APIKey: "k"}).Refresh(context.Background(), "r", time.Now()); res.Outcome != Failed || res.Status != 0 {
		t.Fatalf("closed server: %v %d", res.Outcome, res.Status)
	}
}

package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCORSPassesPosition: pages of an allowed origin may send
// Tablegate-Position (preflight) and read it from a write's answer.
func TestCORSPassesPosition(t *testing.T) {
	t.Parallel()
	h := corsHandler(&CORSConfig{AllowedOrigins: []string{"https://app.example.com"}}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Tablegate-Position", "0/16B3748")
		w.WriteHeader(http.StatusCreated)
	}))
	pre := httptest.NewRequest(http.MethodOptions, "/api/todos", nil)
	pre.Header.Set("Origin", "https://app.example.com")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "authorization,tablegate-position")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	if got := strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers")); !strings.Contains(got, "tablegate-position") {
		t.Fatalf("preflight allows headers %q (status %d)", got, rec.Code)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/todos", nil)
	req.Header.Set("Origin", "https://app.example.com")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "Tablegate-Position") {
		t.Fatalf("exposed headers %q", got)
	}
}

// TestCORSOrigin: an allowed origin is written as browsers send it, and
// anything that is not exactly one origin — patterns rs/cors would treat
// as wildcards above all — is refused.
func TestCORSOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://App.Example.com":       "https://app.example.com",
		"https://app.example.com/":      "https://app.example.com",
		"https://app.example.com:443":   "https://app.example.com",
		"http://localhost:80":           "http://localhost",
		"http://localhost:3000":         "http://localhost:3000",
		"https://xn--bcher-kva.example": "https://xn--bcher-kva.example",
		"http://[::1]:8080":             "http://[::1]:8080",
	} {
		if got, err := corsOrigin(in); err != nil || got != want {
			t.Errorf("corsOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"https://*", "https://*example.com", "https://app.example.com*", "http://localhost*", "https://*.example.com",
		"https://app.example.com/?", "https://app.example.com#", "https://app.example.com.", "https://app.example.com:",
		"https://bücher.example", "https://u@app.example.com", "https://app.example.com/x", "null", "file:///x", "",
		"ftp://app.example.com", " https://app.example.com", "https://app.example.com ", "https://%2A.example.com",
	} {
		if got, err := corsOrigin(in); err == nil {
			t.Errorf("corsOrigin(%q) = %q, want an error", in, got)
		}
	}
}

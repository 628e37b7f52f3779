package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// TestServeCORSConfigErrors: origins that are not origins are refused at
// start.
func TestServeCORSConfigErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ cors, msg string }{
		"empty":         {`{"allowed_origins":[]}`, "cors.allowed_origins is empty"},
		"star and more": {`{"allowed_origins":["*","https://a.example"]}`, `"*" allows every origin`},
		"path":          {`{"allowed_origins":["https://a.example/app"]}`, "cors.allowed_origins[0]"},
		"no scheme":     {`{"allowed_origins":["a.example"]}`, "cors.allowed_origins[0]"},
		"max age":       {`{"allowed_origins":["*"],"max_age":"soon"}`, "not a duration"},
		"max age ms":    {`{"allowed_origins":["*"],"max_age":"500ms"}`, "below 1s"},
	} {
		cfg := filepath.Join(t.TempDir(), "tablegate.json")
		if err := os.WriteFile(cfg, []byte(`{"tables":{"t":{}},"cors":`+c.cors+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "serve", "--config", cfg)
		if r.code == 0 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q (want %q)", name, r.code, r.stderr, c.msg)
		}
	}
}

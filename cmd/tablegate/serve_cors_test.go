package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

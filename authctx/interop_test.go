package authctx

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeDir is the node project holding the pinned @supabase/ssr.
const nodeDir = "../integration/node"

// requireNode fails (never skips) when node or the pinned packages are
// missing, with a one-line instruction.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: install Node.js 20+, then run `npm ci` in integration/node")
	}
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "@supabase", "ssr", "package.json")); err != nil {
		t.Fatal("integration/node/node_modules is missing: run `npm ci` in integration/node")
	}
	return node
}

type ssrOutput struct {
	Cookies []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"cookies"`
	SetCookie []string          `json:"set_cookie"`
	Headers   map[string]string `json:"headers"`
	Requests  []string          `json:"requests"`
}

// runNode runs node with args in nodeDir, input as JSON on stdin, and
// decodes its stdout into out. It fails — never skips — when node or the
// packages are missing.
func runNode(t *testing.T, input, out any, args ...string) {
	t.Helper()
	node := requireNode(t)
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = nodeDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", args[len(args)-1], err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node output %q: %v\n%s", stdout, err, stderr.String())
	}
}

// writeSSRSession has the real @supabase/ssr server client store a session
// whose access token is tok, and returns the cookies it set.
func writeSSRSession(t *testing.T, projectURL, tok string, exp int64, bio, encoding string) ssrOutput {
	t.Helper()
	var res ssrOutput
	runNode(t, map[string]any{"url": projectURL, "key": "sb_publishable_TESTKEY", "access_token": tok,
		"expires_at": exp, "user_id": testUserID, "bio": bio, "encoding": encoding}, &res, "ssr-write-session.mjs")
	return res
}

// TestSSRCookieInterop: a session cookie written by the real
// @supabase/ssr 0.12.7 resolves to the right user, single and chunked.
func TestSSRCookieInterop(t *testing.T) {
	t.Parallel()
	requireNode(t)
	testKeys(t)
	const projectURL = "https://abcdefghijklmnopqrst.supabase.co"
	rv, err := New(context.Background(), &Config{ProjectURL: projectURL, VerifierConfig: VerifierConfig{Issuer: testIssuer, JWKS: jwksJSON(ecJWK(ecKey, kidEC))}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if rv.CookieName() != "sb-abcdefghijklmnopqrst-auth-token" {
		t.Fatalf("cookie name %q", rv.CookieName())
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		name     string
		bio      string
		encoding string
		chunks   int // exact for 1, minimum otherwise
	}{
		{"single cookie", "", "base64url", 1},
		{"chunked", strings.Repeat("x", 1000), "base64url", 2},
		{"many chunks", strings.Repeat("y", 6000), "base64url", 5},
		{"raw encoding (URI-encoded JSON)", "", "raw", 1},
		{"raw encoding chunked", strings.Repeat("z", 1500), "raw", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The token itself carries the metadata too, as GoTrue's does.
			tok := signES(t, ecKey, kidEC, userClaims(map[string]any{"exp": exp,
				"user_metadata": map[string]any{"bio": tc.bio}}))
			out := writeSSRSession(t, projectURL, tok, exp, tc.bio, tc.encoding)
			if (tc.chunks == 1 && len(out.Cookies) != 1) || len(out.Cookies) < tc.chunks {
				names := []string{}
				for _, c := range out.Cookies {
					names = append(names, c.Name)
				}
				t.Fatalf("@supabase/ssr wrote %d cookies %v, want %d", len(out.Cookies), names, tc.chunks)
			}
			if tc.chunks > 1 {
				t.Logf("@supabase/ssr wrote %d chunks", len(out.Cookies))
			}
			if tc.encoding == "base64url" && !strings.HasPrefix(out.Cookies[0].Value, "base64-") {
				t.Fatalf("first cookie is not base64- encoded")
			}
			// Send back what a browser would: the values of the Set-Cookie
			// lines @supabase/ssr rendered, in one Cookie header.
			r := httptest.NewRequest("GET", "/", nil)
			var pairs []string
			for _, line := range out.SetCookie {
				c, err := http.ParseSetCookie(line)
				if err != nil {
					t.Fatalf("Set-Cookie %q: %v", line, err)
				}
				if c.MaxAge < 0 || c.Value == "" {
					continue
				}
				if tc.chunks > 1 && !strings.HasPrefix(c.Name, rv.CookieName()+".") {
					t.Errorf("chunk name %q", c.Name)
				}
				pairs = append(pairs, c.Name+"="+c.Value)
			}
			r.Header.Set("Cookie", "theme=dark; "+strings.Join(pairs, "; "))
			res := rv.Resolve(r)
			if res.Auth.Kind != KindUser || res.Source != SourceCookie {
				t.Fatalf("resolved %s/%s from %s (%v)", res.Auth.Kind, res.Auth.Reason, res.Source, res.Auth.Err)
			}
			if res.Auth.User.ID != testUserID || res.Auth.User.Token != tok {
				t.Fatalf("user %q, token match %v", res.Auth.User.ID, res.Auth.User.Token == tok)
			}
		})
	}
}

package authctx

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// rfNodeDir holds the pinned @supabase/ssr 0.12.7 and supabase-js 2.119.1.
const rfNodeDir = "../integration/node"

// rfNode runs a script of rfNodeDir with input as JSON on stdin and
// decodes its stdout into out. It fails — never skips — when node or the
// packages are missing.
func rfNode(t *testing.T, script string, input, out any) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: install Node.js 20+, then run `npm ci` in integration/node")
	}
	if _, err := os.Stat(filepath.Join(rfNodeDir, "node_modules", "@supabase", "ssr", "package.json")); err != nil {
		t.Fatal("integration/node/node_modules is missing: run `npm ci` in integration/node")
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = rfNodeDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s output %q: %v\n%s", script, stdout, err, stderr.String())
	}
}

type rfNodeCookie struct {
	Name    string         `json:"name"`
	Value   string         `json:"value"`
	Options map[string]any `json:"options,omitempty"`
}

type rfNodeRead struct {
	Session *struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresAt    int64  `json:"expires_at"`
	} `json:"session"`
	SessionJSON *string        `json:"session_json"`
	Error       *string        `json:"error"`
	SetAll      []rfNodeCookie `json:"setAll"`
}

// rfJar applies Set-Cookie lines to a browser's cookies for one site.
func rfJar(t *testing.T, jar []*http.Cookie, h http.Header) []*http.Cookie {
	t.Helper()
	for _, c := range parsedSetCookies(t, h) {
		out := jar[:0:0]
		for _, old := range jar {
			if old.Name != c.Name {
				out = append(out, old)
			}
		}
		if c.MaxAge > 0 {
			out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
		}
		jar = out
	}
	return jar
}

func rfNodeCookies(cs []*http.Cookie) []rfNodeCookie {
	out := make([]rfNodeCookie, len(cs))
	for i, c := range cs {
		out[i] = rfNodeCookie{Name: c.Name, Value: c.Value}
	}
	return out
}

// The cookies tablegate writes after a refresh are read back by the real
// createServerClient to the same session, byte for byte, for a single
// cookie and for a chunked one.
func TestRefreshInteropNodeReadsTablegateCookies(t *testing.T) {
	t.Parallel()
	for _, bio := range []string{"short", strings.Repeat("x", 3000)} {
		b := rfSetup(t, true, nil)
		b.auth.mu.Lock()
		b.auth.bio = bio
		b.auth.mu.Unlock()
		jar := b.cookies(30 * time.Second)
		res := b.rv.Resolve(rfRequest(jar))
		b.assertNewSession(res, "newrefresh1")
		stored, _ := ssrcookie.Read(res.RequestCookies, b.name)
		jar = rfJar(t, jar, applied(res))
		chunks := 0
		for _, c := range jar {
			if strings.HasPrefix(c.Name, b.name) {
				chunks++
			}
		}
		if (len(bio) > 100) != (chunks > 1) {
			t.Fatalf("bio %d chars: %d session cookies", len(bio), chunks)
		}

		var got rfNodeRead
		rfNode(t, "ssr-read-session.mjs", map[string]any{"url": b.auth.URL, "key": rfAPIKey, "cookies": rfNodeCookies(jar)}, &got)
		if got.Error != nil || got.Session == nil {
			t.Fatalf("node: no session (%v)", got.Error)
		}
		if got.Session.AccessToken != res.Auth.User.Token || got.Session.RefreshToken != "newrefresh1" {
			t.Fatalf("node read other tokens: refresh %q", got.Session.RefreshToken)
		}
		if *got.SessionJSON != string(stored) {
			t.Fatalf("node's JSON.stringify differs from the stored bytes:\nnode %s\ngo   %s", *got.SessionJSON, stored)
		}
		if len(got.SetAll) != 0 {
			t.Fatalf("node rewrote cookies: %v", got.SetAll)
		}
		if b.auth.calls.Load() != 1 {
			t.Fatalf("%d refresh calls (node must not refresh a fresh session)", b.auth.calls.Load())
		}
	}
}

// A session written by the real @supabase/ssr (signInWithPassword against
// the fake auth server) is refreshed by tablegate, and node reads the
// result.
func TestRefreshInteropTablegateRefreshesNodeSession(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, true, nil)
	b.auth.mu.Lock()
	b.auth.bio = strings.Repeat("y", 3000) // chunked on both sides
	b.auth.mu.Unlock()
	var signin struct {
		Error  *string        `json:"error"`
		SetAll []rfNodeCookie `json:"setAll"`
	}
	rfNode(t, "ssr-sign-in.mjs", map[string]any{"url": b.auth.URL, "key": rfAPIKey, "email": "a@example.com", "password": "pw"}, &signin)
	if signin.Error != nil {
		t.Fatalf("node sign-in: %s", *signin.Error)
	}
	var jar []*http.Cookie
	for _, c := range signin.SetAll {
		if c.Value != "" {
			jar = append(jar, &http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	if len(jar) < 2 || jar[0].Name != b.name+".0" {
		t.Fatalf("node wrote %v", jar)
	}
	res := b.rv.Resolve(rfRequest(jar))
	b.assertNewSession(res, "newrefresh1")
	b.auth.mu.Lock()
	rt := b.auth.lastRT
	b.auth.mu.Unlock()
	if rt != "newrefreshpw" || b.auth.calls.Load() != 1 {
		t.Fatalf("refresh sent %q, %d calls; want the token node stored", rt, b.auth.calls.Load())
	}
	jar = rfJar(t, jar, applied(res))
	var got rfNodeRead
	rfNode(t, "ssr-read-session.mjs", map[string]any{"url": b.auth.URL, "key": rfAPIKey, "cookies": rfNodeCookies(jar)}, &got)
	if got.Session == nil || got.Session.AccessToken != res.Auth.User.Token || got.Session.RefreshToken != "newrefresh1" {
		t.Fatalf("node after tablegate's refresh: %+v %v", got.Session, got.Error)
	}
}

package authctx

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/problem"
)

// TestOverHTTP runs the stack on a real server and client: Middleware,
// CrossSite and Guard answer with the statuses and Problem bodies of the
// problem catalogue.
func TestOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	srv := httptest.NewServer(b.rv.Middleware(b.rv.CrossSite(Guard(AllowUser)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, AuthFrom(r.Context()).User.ID)
	})))))
	defer srv.Close()
	sess := sessionCookieValue(b.token(nil), time.Now().Add(time.Hour).Unix())

	cases := []struct {
		name   string
		method string
		hdr    map[string]string
		status int
		code   problem.Code
	}{
		{"valid Bearer", "GET", map[string]string{"Authorization": "Bearer " + b.token(nil)}, 200, ""},
		{"session cookie", "GET", map[string]string{"Cookie": b.rv.CookieName() + "=" + sess}, 200, ""},
		{"garbage Bearer", "GET", map[string]string{"Authorization": "Bearer ..."}, 401, problem.CodeTokenMalformed},
		{"anonymous sign-in", "GET", map[string]string{"Authorization": "Bearer " + b.token(map[string]any{"is_anonymous": true})}, 403, problem.CodeAnonymousUser},
		{"no credential", "GET", nil, 401, problem.CodeAuthRequired},
		{"cross-site cookie form post", "POST", map[string]string{"Cookie": b.rv.CookieName() + "=" + sess,
			"Sec-Fetch-Site": "cross-site", "Content-Type": "application/x-www-form-urlencoded"}, 403, problem.CodeCrossSiteRequest},
		{"cross-site Bearer post", "POST", map[string]string{"Authorization": "Bearer " + b.token(nil),
			"Sec-Fetch-Site": "cross-site"}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+"/todos", strings.NewReader("a=b"))
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.code == "" {
				if string(body) != testUserID {
					t.Fatalf("body %q", body)
				}
				return
			}
			var p problem.Problem
			if err := json.Unmarshal(body, &p); err != nil || p.Code != c.code || resp.Header.Get("Content-Type") != problem.MediaType {
				t.Fatalf("problem %s (%s)", body, resp.Header.Get("Content-Type"))
			}
		})
	}
}

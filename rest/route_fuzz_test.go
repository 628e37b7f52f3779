package rest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// routeResource is a resource whose routes mix CRUD, collection actions,
// item actions, an action on the key itself and one on the root; its
// Caller answers 401, so every request ends before the database.
func routeResource(tb testing.TB) *Resource {
	tb.Helper()
	none := func(*Ctx, ActionInput[None, None]) (None, error) { return None{}, nil }
	act := func(method, path string) *Action {
		return DefineAction(ActionDef[None, None, None]{Method: method, Path: path, Handler: none})
	}
	r, err := fakeResource(tb, &Config{
		Operations: []Operation{OpList, OpGet, OpUpdate},
		Actions: map[string]*Action{
			"export": act("GET", "/export"), "purge": act("POST", "/export"), "imp": act("POST", "/import"),
			"complete": act("POST", "/{id}/complete"), "replace": act("PUT", "/{id}"), "wipe": act("DELETE", "/"),
			"csv": act("GET", "/{id}/export"), "stats": act("GET", "/export/stats"),
		},
		Caller: func(*http.Request) (authctx.Auth, error) {
			return authctx.Auth{}, problem.New(problem.KindUnauthorized, "No caller in this test.")
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

var routeMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// FuzzRoute: for any method and path, the resource answers without a
// panic and without a 5xx; a 405 carries an Allow header that does not
// name the refused method, and each method it names is not refused with
// 405 on the same path. Seed corpus: testdata/fuzz/FuzzRoute.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{"/", "/export", "/export/", "/import", "/5", "/5/complete", "/export/7", "/x/y/z",
		"/%65xport", "//", "/5/", "/complete", "/5/complete/x", "/%2F"} {
		for i := range routeMethods {
			f.Add(uint8(i), s)
		}
	}
	r := routeResource(f)
	serve := func(method, path string) *httptest.ResponseRecorder {
		if _, err := url.ParseRequestURI(path); err != nil ||
			strings.ContainsFunc(path, func(c rune) bool { return c <= ' ' || c >= 0x7f }) {
			return nil // not a request target a client can send
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(method, "http://x"+path, nil))
		return w
	}
	f.Fuzz(func(t *testing.T, m uint8, path string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") || len(path) > 200 {
			return
		}
		method := routeMethods[int(m)%len(routeMethods)]
		w := serve(method, path)
		if w == nil {
			return
		}
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		if w.Code != http.StatusMethodNotAllowed {
			return
		}
		allow := strings.Split(w.Header().Get("Allow"), ", ")
		if len(w.Header().Values("Allow")) != 1 || slices.Contains(allow, method) {
			t.Fatalf("%s %s: 405 with Allow %q", method, path, w.Header().Values("Allow"))
		}
		for _, a := range allow {
			if a == "HEAD" && !slices.Contains(allow, "GET") {
				t.Fatalf("%s %s: Allow %q names HEAD without GET", method, path, allow)
			}
			if o := serve(a, path); o.Code == http.StatusMethodNotAllowed {
				t.Fatalf("%s %s: Allow %q names %s, which answers 405 too", method, path, allow, a)
			}
		}
	})
}

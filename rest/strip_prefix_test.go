package rest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStripPrefixAsNetHTTP: stripPrefix hands its handler the request
// http.StripPrefix hands it (URL, path values, pattern, context, the
// rest of the request) and answers a path it cannot strip alike.
func TestStripPrefixAsNetHTTP(t *testing.T) {
	t.Parallel()
	seen := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %q %q %q %q %q %q %v %q %v", r.Method, r.URL.String(), r.URL.Path, r.URL.RawPath, r.URL.RawQuery,
			r.RequestURI, r.Pattern, r.Header, r.PathValue("x"), r.Context().Value(ctxKey{}))
	}
	for _, prefix := range []string{"/api/todos", "/todos", "/api/tod%6Fs"} {
		std := http.StripPrefix(prefix, http.HandlerFunc(seen))
		own := stripPrefix(prefix, http.HandlerFunc(seen))
		for _, target := range []string{"/api/todos", "/api/todos/", "/api/todos/5", "/api/todos/5?a=b", "/api/tod%6Fs/5",
			"/api/todos/a%2Fb", "/api/todosx", "/todos/%2F", "/todos", "/other", "/api/todos/%E2%82%AC"} {
			a, b := httptest.NewRecorder(), httptest.NewRecorder()
			for _, rec := range []*httptest.ResponseRecorder{a, b} {
				r := httptest.NewRequest("PATCH", target, nil)
				r.Header.Set("X-Test", "1")
				r.Pattern = "/api/todos/"
				r.SetPathValue("x", "y")
				r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "v"))
				if rec == a {
					std.ServeHTTP(rec, r)
				} else {
					own.ServeHTTP(rec, r)
				}
			}
			if a.Code != b.Code || fmt.Sprint(a.Header()) != fmt.Sprint(b.Header()) || a.Body.String() != b.Body.String() {
				t.Errorf("%s %s: http.StripPrefix %d %v %q, stripPrefix %d %v %q", prefix, target, a.Code, a.Header(), a.Body, b.Code, b.Header(), b.Body)
			}
		}
	}
}

// ctxKey keys a context value the handler must see.
type ctxKey struct{}

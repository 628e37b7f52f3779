package problem

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Write renders the body, headers and status, fills defaults, and never
// serializes the cause.
func TestWriteBodyAndHeaders(t *testing.T) {
	t.Parallel()
	p := New(KindConflict, "A row with the same unique value already exists.").
		WithCause(errors.New(`duplicate key value violates unique constraint "secret_idx"`)).
		WithHeader("Retry-After", "1")
	rec := httptest.NewRecorder()
	Writer{BaseURL: "https://example.test/p"}.Write(rec, p)
	if rec.Code != http.StatusConflict || rec.Header().Get("Content-Type") != MediaType ||
		rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("status %d, header %v", rec.Code, rec.Header())
	}
	if strings.Contains(rec.Body.String(), "secret_idx") {
		t.Fatalf("cause leaked: %s", rec.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "https://example.test/p/conflict" || m["kind"] != "conflict" || m["status"] != float64(409) {
		t.Fatalf("body %v", m)
	}
	if From(errors.New("pq: SELECT secret")).Detail == "" || strings.Contains(From(errors.New("SELECT secret")).Detail, "secret") {
		t.Fatal("From leaks the error text")
	}
}

// A header the problem carries replaces the response's (a router's own
// Allow), and keeps every value the problem gave it; Set-Cookie and Vary
// are added to; other headers stay.
func TestWriteReplacesItsHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Allow", "GET, HEAD")
	rec.Header().Set("Vary", "Cookie")
	rec.Header().Add("Set-Cookie", "a=1")
	rec.Header().Set("X-Other", "kept")
	p := New(KindMethodNotAllowed, "").WithHeader("allow", "GET, HEAD").
		WithHeader("WWW-Authenticate", `Bearer realm="a"`).WithHeader("WWW-Authenticate", `Basic realm="b"`).
		WithHeader("Set-Cookie", "b=2").WithHeader("Vary", "Origin")
	Write(rec, p)
	h := rec.Header()
	if len(h.Values("Allow")) != 1 || len(h.Values("WWW-Authenticate")) != 2 || h.Get("X-Other") != "kept" ||
		strings.Join(h.Values("Set-Cookie"), ";") != "a=1;b=2" || strings.Join(h.Values("Vary"), ",") != "Cookie,Origin" {
		t.Fatalf("headers %v", h)
	}
}

// Regression: Write filled Type (and other defaults) into the problem it
// was given, so one problem value shared by concurrent requests (a package
// variable returned by a hook or a Caller func) was written to from many
// goroutines, and the first writer's BaseURL stuck for every later one.
// Run with -race.
func TestWriteDoesNotModifyTheProblem(t *testing.T) {
	t.Parallel()
	shared := &Problem{Kind: KindForbidden, Detail: "no"}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Writer{BaseURL: "https://a.test"}.Write(httptest.NewRecorder(), shared)
		}()
	}
	wg.Wait()
	if shared.Type != "" || shared.Status != 0 || shared.Title != "" {
		t.Fatalf("Write modified its argument: %+v", shared)
	}
	rec := httptest.NewRecorder()
	Writer{BaseURL: "https://b.test"}.Write(rec, shared)
	if !strings.Contains(rec.Body.String(), "https://b.test/forbidden") || rec.Code != 403 {
		t.Fatalf("second writer: %d %s", rec.Code, rec.Body)
	}
}

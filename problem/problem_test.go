package problem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/problem"
)

func TestKindsHaveStatusAndTitle(t *testing.T) {
	for _, k := range problem.Kinds() {
		if k.Status() < 400 || k.Title() == "Error" {
			t.Errorf("kind %s: status %d title %q", k, k.Status(), k.Title())
		}
	}
	if problem.Kind("nope").Status() != 500 {
		t.Error("unknown kind must be 500")
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[problem.Code]bool{}
	for _, c := range problem.Catalogue() {
		if seen[c.Code] {
			t.Errorf("duplicate code %s", c.Code)
		}
		seen[c.Code] = true
		if c.Kind.Status() != c.Status && c.Kind != problem.KindForbidden {
			t.Errorf("%s: status %d does not match kind %s", c.Code, c.Status, c.Kind)
		}
		p := problem.WithCode(c.Code, "d")
		if p.Status != c.Status || p.Code != c.Code || p.Kind != c.Kind {
			t.Errorf("WithCode(%s) = %+v", c.Code, p)
		}
	}
	for _, c := range []problem.Code{problem.CodePermissionDenied, problem.CodeApprovalRequired,
		problem.CodeAnonymousUser, problem.CodeCrossSiteRequest, problem.CodeClaimsInvalid} {
		if !seen[c] {
			t.Errorf("seed code %s missing from the catalogue", c)
		}
	}
}

func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	problem.Writer{BaseURL: "https://errors.example.com"}.Write(w,
		problem.New(problem.KindMethodNotAllowed, "GET only.").WithHeader("Allow", "GET"))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET" ||
		w.Header().Get("Content-Type") != problem.MediaType {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body["type"] != "https://errors.example.com/method_not_allowed" || body["status"] != float64(405) {
		t.Fatalf("%v", body)
	}
}

func TestFromHidesInternalErrors(t *testing.T) {
	secret := errors.New(`pq: relation "secret_table" violates constraint; token eyJhbGciOi`)
	p := problem.From(fmt.Errorf("wrapped: %w", secret))
	w := httptest.NewRecorder()
	problem.Write(w, p)
	if w.Code != 500 || strings.Contains(w.Body.String(), "secret_table") || strings.Contains(w.Body.String(), "eyJ") {
		t.Fatalf("leaked: %s", w.Body.String())
	}
	if !errors.Is(p, secret) {
		t.Fatal("the cause must stay reachable for logs")
	}
	if problem.From(nil) != nil {
		t.Fatal("From(nil) must be nil")
	}
	wrapped := fmt.Errorf("ctx: %w", problem.PermissionDenied("todos.delete"))
	if got := problem.From(wrapped); got.Permission != "todos.delete" || got.Status != 403 {
		t.Fatalf("a wrapped problem must be kept: %+v", got)
	}
}

// Example shows the body of a permission refusal.
func Example() {
	w := httptest.NewRecorder()
	problem.Write(w, problem.ApprovalRequired("todos.purge", "5f0c"))
	fmt.Println(w.Code, w.Header().Get("Content-Type"))
	fmt.Print(w.Body.String())
	// Output:
	// 403 application/problem+json
	// {"type":"https://tablegate.dev/problems/forbidden","title":"Forbidden","status":403,"kind":"forbidden","detail":"Permission todos.purge needs an approval first.","code":"APPROVAL_REQUIRED","permission":"todos.purge","approval":{"id":"5f0c"}}
}

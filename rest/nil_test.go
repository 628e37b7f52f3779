package rest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNilResourceAnswersProblem: the nil a failed NewResource returns,
// mounted anyway, answers a 500 problem rather than panicking.
func TestNilResourceAnswersProblem(t *testing.T) {
	t.Parallel()
	var r *Resource
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusInternalServerError || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
		t.Fatalf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
	}
}

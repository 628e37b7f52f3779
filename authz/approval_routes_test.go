package authz_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/internal/syncbuf"
	"github.com/tablegate/tablegate/telemetry"
)

// TestApprovalRoutesReported: the approvals handler names its routes to
// telemetry.Handler (mounted below a prefix, as the API mounts it), never
// an id; an unknown route stays "other". Before, every approvals request
// was reported under the API's mount point.
func TestApprovalRoutesReported(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	tel, err := telemetry.New(&telemetry.Config{AccessLog: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(http.StripPrefix("/api/approvals", authz.NewApprovals(nil).Handler(nil)))
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/approvals"}, {"GET", "/api/approvals/secret-id-1"},
		{"POST", "/api/approvals/secret-id-2/approve"}, {"POST", "/api/approvals/secret-id-3/deny"},
		{"GET", "/api/approvals/a/b/c"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(r.method, r.path, nil))
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{`"route":"/api/approvals/","status":401`, `"route":"/api/approvals/{id}","status":401`,
		`"route":"/api/approvals/{id}/approve"`, `"route":"/api/approvals/{id}/deny"`, `"route":"other","status":404`}
	if len(lines) != len(want) {
		t.Fatalf("access log:\n%s", logs.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: want %s in %s", i, w, lines[i])
		}
	}
	if strings.Contains(logs.String(), "secret-id") {
		t.Errorf("an id in the access log:\n%s", logs.String())
	}
}

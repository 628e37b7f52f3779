package mcptools

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestProblemResult: a tool error carries exactly the bytes the HTTP
// writer sends (without the final newline), its status and Retry-After.
func TestProblemResult(t *testing.T) {
	t.Parallel()
	s := &Server{pw: problem.Writer{BaseURL: "https://example.test/p"}}
	mk := func() *problem.Problem {
		return problem.New(problem.KindUnavailable, "The database is unavailable.").WithHeader("Retry-After", "2")
	}
	rec := httptest.NewRecorder()
	s.pw.Write(rec, mk())
	res := s.problemResult(mk())
	if !res.IsError || res.Meta[MetaStatus] != http.StatusServiceUnavailable || res.Meta[MetaRetryAfter] != "2" {
		t.Fatalf("meta %v", res.Meta)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got+"\n" != rec.Body.String() {
		t.Fatalf("tool error %q, HTTP %q", got, rec.Body.String())
	}
}

// TestResult: JSON bodies are text and structured content; a 204 is an
// empty text; text of another type is text; binary is an embedded blob.
func TestResult(t *testing.T) {
	t.Parallel()
	r := result(&rest.Result{Status: 200, Body: []byte(`{"a":1}`), ContentType: "application/json"})
	if r.StructuredContent == nil || r.Content[0].(*mcp.TextContent).Text != `{"a":1}` || r.Meta[MetaStatus] != 200 {
		t.Fatalf("json %+v", r)
	}
	r = result(&rest.Result{Status: 200, Body: []byte(`[1]`), ContentType: "application/vnd.x+json; charset=utf-8"})
	if r.StructuredContent == nil {
		t.Fatalf("+json %+v", r)
	}
	r = result(&rest.Result{Status: 204})
	if r.StructuredContent != nil || r.Content[0].(*mcp.TextContent).Text != "" {
		t.Fatalf("204 %+v", r)
	}
	r = result(&rest.Result{Status: 200, Body: []byte("a,b\n1,2\n"), ContentType: "text/csv"})
	if r.StructuredContent != nil || r.Content[0].(*mcp.TextContent).Text != "a,b\n1,2\n" {
		t.Fatalf("csv %+v", r)
	}
	r = result(&rest.Result{Status: 200, Body: []byte{0xff, 0x00, 0xfe}, ContentType: "application/octet-stream"})
	er, ok := r.Content[0].(*mcp.EmbeddedResource)
	if !ok || er.Resource.MIMEType != "application/octet-stream" || len(er.Resource.Blob) != 3 {
		t.Fatalf("blob %+v", r.Content[0])
	}
}

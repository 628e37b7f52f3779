package reference_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/spec/reference"
)

func TestPageRoutes(t *testing.T) {
	t.Parallel()
	h := reference.Page(spec.DocsPage{Path: "/api/docs", DocumentURL: "/api/openapi.json", Title: `Todos <"API">`})
	do := func(method, path, enc string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		if enc != "" {
			r.Header.Set("Accept-Encoding", enc)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	page := do("GET", "/api/docs", "")
	body := page.Body.String()
	if page.Code != 200 || !strings.Contains(body, `<script src="/api/docs/scalar.js"></script>`) ||
		!strings.Contains(body, "<title>Todos &lt;&#34;API&#34;&gt;</title>") || page.Header().Get("Content-Security-Policy") != reference.CSP {
		t.Fatalf("page %d %v\n%s", page.Code, page.Header(), body)
	}
	if strings.Contains(reference.CSP, "unsafe-eval") || strings.Contains(reference.CSP, "http") {
		t.Errorf("CSP too loose: %s", reference.CSP)
	}
	init := do("GET", "/api/docs/init.js", "").Body.String()
	if !strings.Contains(init, `"url":"/api/openapi.json"`) || !strings.Contains(init, `"withDefaultFonts":false`) {
		t.Errorf("init.js: %s", init)
	}
	gz := do("GET", "/api/docs/scalar.js", "br, gzip")
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("ETag") == "" {
		t.Fatalf("gzip asset headers %v", gz.Header())
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	plainFromGz, _ := io.ReadAll(zr)
	plain := do("GET", "/api/docs/scalar.js", "gzip;q=0")
	if plain.Header().Get("Content-Encoding") != "" || !bytes.Equal(plain.Body.Bytes(), plainFromGz) || len(plainFromGz) < 1_000_000 {
		t.Errorf("identity asset: %d bytes, encoding %q", plain.Body.Len(), plain.Header().Get("Content-Encoding"))
	}
	if !bytes.Contains(plainFromGz, []byte(reference.Version)) {
		t.Errorf("asset does not carry version %s", reference.Version)
	}
	r := httptest.NewRequest("GET", "/api/docs/scalar.js", nil)
	r.Header.Set("If-None-Match", gz.Header().Get("ETag"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", w.Code)
	}
	if w := do("GET", "/api/docs/nope.js", ""); w.Code != 404 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
		t.Errorf("unknown asset: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	if w := do("POST", "/api/docs", ""); w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", w.Code, w.Header())
	}
	if w := do("HEAD", "/api/docs", ""); w.Code != 200 || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d, %d bytes", w.Code, w.Body.Len())
	}
}

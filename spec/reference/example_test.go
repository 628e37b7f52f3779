package reference_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/spec/reference"
)

// Page is what spec.Config.Docs takes: DefineAPI calls it with the page's
// path and the document's URL. Called directly, it serves the same routes.
func ExamplePage() {
	h := reference.Page(spec.DocsPage{Path: "/api/docs", DocumentURL: "/api/openapi.json", Title: "Todos"})
	for _, path := range []string{"/api/docs", "/api/docs/scalar.js", "/api/docs/init.js"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, w.Code, w.Header().Get("Content-Type"))
	}
	// Output:
	// /api/docs 200 text/html; charset=utf-8
	// /api/docs/scalar.js 200 text/javascript; charset=utf-8
	// /api/docs/init.js 200 text/javascript; charset=utf-8
}

package reference

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/spec"
)

var (
	//go:embed assets/scalar-standalone.js.gz
	scalarGz []byte
	//go:embed assets/VERSION
	versionFile string
)

// Version is the version of @scalar/api-reference embedded.
var Version = strings.Fields(versionFile)[0]

// CSP is the Content-Security-Policy of the page and its scripts: scripts,
// the document and try-it requests from the page's own origin only; inline
// styles, which the renderer injects; images and fonts from the origin or
// data: URLs. Nothing else, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Page returns the handler of the reference page described by p, for
// [spec.Config].Docs. It serves p.Path (the HTML page), p.Path+"/scalar.js"
// (the renderer, gzip-encoded when the client accepts it) and
// p.Path+"/init.js" (the page's configuration); other paths below p.Path
// answer a 404 problem, methods other than GET and HEAD a 405.
func Page(p spec.DocsPage) http.Handler {
	cfg, _ := json.Marshal(map[string]any{
		"url":                  p.DocumentURL,
		"withDefaultFonts":     false, // the default fonts come from a CDN
		"hideClientButton":     true,  // the external client app is not embedded
		"telemetry":            false,
		"showDeveloperTools":   "never",
		"agent":                map[string]any{"disabled": true},
		"mcp":                  map[string]any{"disabled": true},
		"authentication":       map[string]any{"preferredSecurityScheme": spec.SchemeBearer},
		"defaultOpenAllTags":   false,
		"documentDownloadType": "both",
	})
	initJS := []byte("Scalar.createApiReference('#app', " + string(cfg) + ");\n")
	title := p.Title
	if title == "" {
		title = "API reference"
	}
	page := []byte(fmt.Sprintf(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<link rel="icon" href="data:,">
</head>
<body>
<noscript>This API reference needs JavaScript. The description itself is at <a href="%s">%s</a>.</noscript>
<div id="app"></div>
<script src="%s/scalar.js"></script>
<script src="%s/init.js"></script>
</body>
</html>
`, html.EscapeString(title), html.EscapeString(p.DocumentURL), html.EscapeString(p.DocumentURL),
		html.EscapeString(p.Path), html.EscapeString(p.Path)))
	etag := `"scalar-` + Version + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			problem.Write(w, problem.New(problem.KindMethodNotAllowed, "The method is not served here.").WithHeader("Allow", "GET, HEAD"))
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", CSP)
		h.Set("Referrer-Policy", "no-referrer")
		switch r.URL.Path {
		case p.Path:
			write(w, r, "text/html; charset=utf-8", page)
		case p.Path + "/init.js":
			write(w, r, "text/javascript; charset=utf-8", initJS)
		case p.Path + "/scalar.js":
			h.Set("Cache-Control", "public, max-age=86400")
			h.Set("ETag", etag)
			h.Add("Vary", "Accept-Encoding")
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			if acceptsGzip(r) {
				h.Set("Content-Encoding", "gzip")
				write(w, r, "text/javascript; charset=utf-8", scalarGz)
				return
			}
			zr, err := gzip.NewReader(bytes.NewReader(scalarGz))
			if err != nil {
				problem.Write(w, problem.New(problem.KindUnexpected, "The reference page is unavailable."))
				return
			}
			h.Set("Content-Type", "text/javascript; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			if r.Method != http.MethodHead {
				_, _ = io.Copy(w, zr)
			}
		default:
			problem.Write(w, problem.New(problem.KindNotFound, "No such route."))
		}
	})
}

func write(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether Accept-Encoding lists gzip without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

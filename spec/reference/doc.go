// Package reference serves an interactive API reference page for a
// tablegate OpenAPI document: Scalar's API reference (the npm package
// @scalar/api-reference, MIT), embedded so the page works offline, with
// navigation, search, collapsible schemas, request and response examples
// and a try-it panel that sends the caller's own token.
//
// The renderer is about 1.3 MB compressed; it lives in this package so that
// programs pay for it only when they import it. Plug it into [spec.Config]:
//
//	api, err := spec.DefineAPI(&spec.Config{..., Docs: reference.Page})
//
// and BasePath/docs serves the page, its script and the caller's requests
// go to the API itself (same origin). Nothing is loaded from a CDN: the
// page's Content-Security-Policy allows only its own origin.
//
// The embedded version is [Version]; "make docs-asset" refreshes it from
// npm (pinned version and integrity in the Makefile).
package reference

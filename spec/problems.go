package spec

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/tablegate/tablegate/problem"
)

// problemSchema is the schema of every error body (RFC 9457 fields plus
// kind, code, permission, approval, errors and request_id).
func problemSchema() *omap {
	var kinds []any
	for _, k := range problem.Kinds() {
		kinds = append(kinds, string(k))
	}
	var codes []string
	for _, c := range problem.Catalogue() {
		codes = append(codes, string(c.Code))
	}
	str := func(desc string) *omap { return newMap().set("type", "string").set("description", desc) }
	return newMap().set("type", "object").
		set("description", "RFC 9457 problem details, sent as application/problem+json.").
		set("required", []any{"type", "title", "status", "kind"}).
		set("properties", newMap().
			set("type", newMap().set("type", "string").set("format", "uri").set("description", "`{problems_url}/<kind>`")).
			set("title", str("Short summary of the kind.")).
			set("status", newMap().set("type", "integer").set("description", "The HTTP status.")).
			set("kind", newMap().set("type", "string").set("enum", kinds)).
			set("detail", str("What went wrong in this occurrence; never SQL text or token values.")).
			set("code", str("Stable machine-readable code. Catalogue: "+joinComma(codes)+"; hooks may add their own.")).
			set("permission", str("The permission key of a permission refusal.")).
			set("approval", newMap().set("type", "object").set("required", []any{"id"}).
				set("properties", newMap().set("id", str("The approval the request waits for.")))).
			set("errors", newMap().set("type", "array").set("description", "Failing paths of a body, query or claims set; never their values.").
				set("items", newMap().set("type", "object").set("required", []any{"path", "message"}).
					set("properties", newMap().
						set("path", str("JSON Pointer into the checked document.")).
						set("message", str("What is wrong."))))).
			set("request_id", str("Correlates an unexpected error with the server log.")))
}

func joinComma(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// example is one named example of an error response.
type example struct {
	name, summary string
	p             *problem.Problem
}

// errorExamples are the examples of each shared error response: bodies
// rendered by the same problem writer the handlers use.
func errorExamples() map[int][]example {
	catalogue := map[int][]example{}
	for _, c := range problem.Catalogue() {
		catalogue[c.Status] = append(catalogue[c.Status], example{string(c.Code), c.Description, problem.WithCode(c.Code, c.Description)})
	}
	const approval = "7d6f0c1e-9a3b-4f7e-8a55-0f4c2b1d9e21"
	forbidden := []example{
		{string(problem.CodePermissionDenied), "The authorizer refused the permission.", problem.PermissionDenied("todos.update")},
		{string(problem.CodeApprovalRequired), "The authorizer requires an approval first.", problem.ApprovalRequired("todos.delete", approval)},
	}
	for _, e := range catalogue[http.StatusForbidden] {
		if e.name != string(problem.CodePermissionDenied) && e.name != string(problem.CodeApprovalRequired) {
			forbidden = append(forbidden, e)
		}
	}
	forbidden = append(forbidden, example{"ROW_POLICY", "A row-level security policy or privilege refused a write.",
		problem.New(problem.KindForbidden, "A row-level security policy or privilege refused the operation.")})
	bad := problem.New(problem.KindBadRequest, "The body does not match its schema.")
	bad.Errors = []problem.FieldError{{Path: "/title", Message: "is required"}}
	unique := problem.New(problem.KindConflict, `A row with the same slug already exists (unique constraint "todos_slug_key").`)
	unique.Errors = []problem.FieldError{{Path: "/slug", Message: `violates unique constraint "todos_slug_key"`}}
	check := problem.New(problem.KindUnprocessable, `A value violates check constraint "todos_title_check" on title.`)
	check.Errors = []problem.FieldError{{Path: "/title", Message: `violates check constraint "todos_title_check"`}}
	unexpected := problem.New(problem.KindUnexpected, "The server could not complete the request.")
	unexpected.RequestID = "5f1c2e9a0b7d4c3e8f6a1b2c"
	return map[int][]example{
		http.StatusBadRequest: {
			{"BODY_SCHEMA", "A body that does not match its schema.", bad},
			{"QUERY", "A malformed list query.", problem.New(problem.KindBadRequest, `Query parameter "limit": must be a positive integer.`)},
		},
		http.StatusUnauthorized: catalogue[http.StatusUnauthorized],
		http.StatusForbidden:    forbidden,
		http.StatusNotFound:     {{"NOT_FOUND", "The row does not exist or row-level security hides it.", problem.New(problem.KindNotFound, "No such row.")}},
		http.StatusConflict: {{"UNIQUE", "A unique constraint refused the write; the constraint and its columns are named, never the value.", unique},
			{"RETRY", "A serialization failure or deadlock; retry.", problem.New(problem.KindConflict, "The request conflicted with a concurrent one; retry it.")}},
		http.StatusRequestEntityTooLarge: {{"TOO_LARGE", "The body exceeds the limit.", problem.New(problem.KindPayloadTooLarge, "The body exceeds 1048576 bytes.")}},
		http.StatusUnsupportedMediaType:  {{"NOT_JSON", "A body that is not JSON.", problem.New(problem.KindUnsupportedMediaType, "The body must be application/json.")}},
		http.StatusUnprocessableEntity:   {{"CHECK", "A check constraint refused a value; the constraint and its columns are named, never the value.", check}},
		http.StatusInternalServerError:   {{"UNEXPECTED", "A hook failed or panicked, or an unexpected error.", unexpected}},
		http.StatusServiceUnavailable:    {{"UNAVAILABLE", "The database is unavailable.", problem.New(problem.KindUnavailable, "The database is unavailable; try again shortly.")}},
	}
}

var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "A malformed key, body or query, or a body value whose JSON type its column does not take; errors name the failing paths.",
	http.StatusUnauthorized:          "The credential did not verify (the code names the cause, e.g. TOKEN_EXPIRED or TOKEN_ISSUER_MISMATCH, and the detail what to do), its claims failed the schema, or the route requires a session.",
	http.StatusNotFound:              "The row does not exist or row-level security hides it.",
	http.StatusConflict:              "A unique or foreign-key constraint (named, with its columns), or a concurrent request (with Retry-After).",
	http.StatusRequestEntityTooLarge: "The body exceeds the resource's limit.",
	http.StatusUnsupportedMediaType:  "The body is not application/json.",
	http.StatusUnprocessableEntity:   "A not-null or check constraint (named, with its columns), or a value out of range for its column.",
	http.StatusInternalServerError:   "An unexpected error; the body carries a request id and nothing internal.",
	http.StatusServiceUnavailable:    "The database is unavailable or the statement timed out (with Retry-After).",
}

// errorResponses renders components.responses for the statuses in use.
func (b *builder) errorResponses() *ordered[*response] {
	ex := errorExamples()
	out := newOrdered[*response]()
	for _, st := range []int{400, 401, 403, 404, 409, 413, 415, 422, 500, 503} {
		if !b.responses[st] {
			continue
		}
		examples := newMap()
		for _, e := range ex[st] {
			examples.set(e.name, newMap().set("summary", e.summary).set("value", b.render(e.p)))
		}
		media := &mediaType{Schema: ref("schemas", "Problem")}
		if examples.len() > 0 {
			media.Examples = examples
		}
		desc := errorDescriptions[st]
		if st == http.StatusForbidden {
			desc = forbiddenDescription()
		}
		resp := &response{Description: desc}
		switch st {
		case http.StatusUnauthorized:
			resp.Headers = newOrdered[*header]().set("WWW-Authenticate",
				&header{Description: "Bearer challenge.", Schema: newMap().set("type", "string")})
		case http.StatusConflict, http.StatusServiceUnavailable:
			resp.Headers = newOrdered[*header]().set("Retry-After",
				&header{Description: "Seconds to wait before retrying, when retrying can help.", Schema: newMap().set("type", "integer")})
		}
		resp.Content = newOrdered[*mediaType]().set(problem.MediaType, media)
		out.set(errorResponseName[st], resp)
	}
	return out
}

// render writes p with the configured problem writer and returns the body
// exactly as a client receives it.
func (b *builder) render(p *problem.Problem) any {
	w := &bodyRecorder{h: http.Header{}}
	b.problems.Write(w, p)
	v, err := decodeOrdered(w.body.Bytes())
	if err != nil {
		return newMap().set("status", strconv.Itoa(w.status))
	}
	return v
}

// bodyRecorder is the minimal http.ResponseWriter render needs.
type bodyRecorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (r *bodyRecorder) Header() http.Header         { return r.h }
func (r *bodyRecorder) WriteHeader(status int)      { r.status = status }
func (r *bodyRecorder) Write(p []byte) (int, error) { return r.body.Write(p) }

// forbiddenDescription describes the shared 403 response with every 403
// code of the catalogue.
func forbiddenDescription() string {
	var codes []string
	for _, c := range problem.Catalogue() {
		if c.Status == http.StatusForbidden {
			codes = append(codes, string(c.Code))
		}
	}
	return "Refused by the guard, the cross-site check, the authorizer (with permission, and approval.id for APPROVAL_REQUIRED), " +
		"a tenant check, or a row-level security policy on a write (no code). Codes: " + joinComma(codes) + "."
}

// Package problem implements RFC 9457 Problem Details, the one error body
// tablegate sends: every refusal or failure, from the guard to the database,
// is written as application/problem+json: type, title, status, detail,
// plus kind, code, and permission, approval, errors or request_id where
// they apply.
//
// A [*Problem] is also a Go error, so hooks and handlers return it like any
// other error; [Write] renders it, and [From] turns any other error into a
// 500 of kind [KindUnexpected] that reveals nothing internal.
package problem

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// MediaType is the content type of every problem body.
const MediaType = "application/problem+json"

// DefaultBaseURL prefixes the kind in a problem's type URL when no other
// base is configured: type = DefaultBaseURL + "/" + kind.
const DefaultBaseURL = "https://tablegate.dev/problems"

// Kind is the broad class of a problem. It ends the type URL.
type Kind string

// The kinds tablegate produces.
const (
	KindBadRequest           Kind = "bad_request"
	KindUnauthorized         Kind = "unauthorized"
	KindForbidden            Kind = "forbidden"
	KindNotFound             Kind = "not_found"
	KindMethodNotAllowed     Kind = "method_not_allowed"
	KindConflict             Kind = "conflict"
	KindPayloadTooLarge      Kind = "payload_too_large"
	KindUnsupportedMediaType Kind = "unsupported_media_type"
	KindUnprocessable        Kind = "unprocessable"
	KindTooManyRequests      Kind = "too_many_requests"
	KindUnexpected           Kind = "unexpected"
	KindUnavailable          Kind = "unavailable"
)

// kindInfo maps a kind to its HTTP status and title.
var kindInfo = map[Kind]struct {
	status int
	title  string
}{
	KindBadRequest:           {http.StatusBadRequest, "Bad request"},
	KindUnauthorized:         {http.StatusUnauthorized, "Unauthorized"},
	KindForbidden:            {http.StatusForbidden, "Forbidden"},
	KindNotFound:             {http.StatusNotFound, "Not found"},
	KindMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	KindConflict:             {http.StatusConflict, "Conflict"},
	KindPayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large"},
	KindUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	KindUnprocessable:        {http.StatusUnprocessableEntity, "Unprocessable content"},
	KindTooManyRequests:      {http.StatusTooManyRequests, "Too many requests"},
	KindUnexpected:           {http.StatusInternalServerError, "Unexpected error"},
	KindUnavailable:          {http.StatusServiceUnavailable, "Service unavailable"},
}

// Kinds lists every kind in a stable order (for documentation generators).
func Kinds() []Kind {
	return []Kind{KindBadRequest, KindUnauthorized, KindForbidden, KindNotFound,
		KindMethodNotAllowed, KindConflict, KindPayloadTooLarge, KindUnsupportedMediaType,
		KindUnprocessable, KindTooManyRequests, KindUnexpected, KindUnavailable}
}

// Status returns the HTTP status of a kind (500 for an unknown kind).
func (k Kind) Status() int {
	if i, ok := kindInfo[k]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// Title returns the human title of a kind.
func (k Kind) Title() string {
	if i, ok := kindInfo[k]; ok {
		return i.title
	}
	return "Error"
}

// Approval names the approval a refused request waits for.
type Approval struct {
	ID string `json:"id"`
}

// FieldError names one failing path of a body, query or claims set. It
// never carries the offending value.
type FieldError struct {
	// Path is a JSON Pointer into the checked document ("/title").
	Path string `json:"path"`
	// Message says what is wrong, without echoing the value.
	Message string `json:"message"`
}

// Problem is an RFC 9457 Problem Details body and a Go error.
//
// The zero value is not useful; build one with [New] or one of the
// constructors for a catalogued [Code].
type Problem struct {
	// Type is the problem type URL; [Write] fills it from the kind when empty.
	Type string `json:"type"`
	// Title is a short human summary; filled from the kind when empty.
	Title string `json:"title"`
	// Status is the HTTP status; filled from the kind when zero.
	Status int `json:"status"`
	// Kind is the broad class of the problem.
	Kind Kind `json:"kind"`
	// Detail explains this occurrence. It never holds SQL text or token values.
	Detail string `json:"detail,omitempty"`
	// Code is a stable machine-readable code from the catalogue, when one applies.
	Code Code `json:"code,omitempty"`
	// Permission is the permission key of a permission refusal.
	Permission string `json:"permission,omitempty"`
	// Approval names the approval a request waits for (APPROVAL_REQUIRED).
	Approval *Approval `json:"approval,omitempty"`
	// Errors lists failing paths of a body, query or claims set.
	Errors []FieldError `json:"errors,omitempty"`
	// RequestID correlates an unexpected error with the server log.
	RequestID string `json:"request_id,omitempty"`

	// Header holds response headers that belong to the problem
	// (Allow, Retry-After, WWW-Authenticate). Not serialized.
	Header http.Header `json:"-"`

	cause error
}

// New returns a problem of the given kind with a detail message.
func New(kind Kind, detail string) *Problem {
	return &Problem{Kind: kind, Status: kind.Status(), Title: kind.Title(), Detail: detail}
}

// Newf is [New] with a format string.
func Newf(kind Kind, format string, args ...any) *Problem {
	return New(kind, fmt.Sprintf(format, args...))
}

// Error implements error. It names the kind, code and detail only.
func (p *Problem) Error() string {
	s := string(p.Kind)
	if p.Code != "" {
		s += " " + string(p.Code)
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Unwrap returns the internal cause, if any. The cause is for logs and
// [errors.Is]; it never reaches the response body.
func (p *Problem) Unwrap() error { return p.cause }

// WithCause returns p with an internal cause attached (for logs only).
func (p *Problem) WithCause(err error) *Problem {
	p.cause = err
	return p
}

// WithHeader returns p with a response header added.
func (p *Problem) WithHeader(key, value string) *Problem {
	if p.Header == nil {
		p.Header = http.Header{}
	}
	p.Header.Add(key, value)
	return p
}

// As reports whether err is or wraps a *Problem and returns it.
func As(err error) (*Problem, bool) {
	var p *Problem
	if errors.As(err, &p) {
		return p, true
	}
	return nil, false
}

// From returns the problem err carries, or a generic 500 of kind
// [KindUnexpected] whose body reveals nothing about err. A nil err gives nil.
func From(err error) *Problem {
	if err == nil {
		return nil
	}
	if p, ok := As(err); ok {
		return p
	}
	return New(KindUnexpected, "The server could not complete the request.").WithCause(err)
}

// Writer renders problems with a configurable type URL base.
// The zero value uses [DefaultBaseURL]. A Writer is safe for concurrent use.
type Writer struct {
	// BaseURL prefixes the kind in the type URL (no trailing slash).
	BaseURL string
}

// Write sends p as application/problem+json with its status and headers;
// a header p carries replaces the response's values of that name, except
// Set-Cookie and Vary, which it adds to.
// It fills the defaults (type, title, status) in the response only; p is
// not modified, so one problem value may be written by many requests.
func (pw Writer) Write(w http.ResponseWriter, p *Problem) {
	if p == nil {
		p = New(KindUnexpected, "")
	}
	// Fill the defaults in a copy: p may be shared by concurrent requests.
	cp := *p
	p = &cp
	if p.Kind == "" {
		p.Kind = KindUnexpected
	}
	if p.Status == 0 {
		p.Status = p.Kind.Status()
	}
	if p.Title == "" {
		p.Title = p.Kind.Title()
	}
	if p.Type == "" {
		base := pw.BaseURL
		if base == "" {
			base = DefaultBaseURL
		}
		p.Type = base + "/" + string(p.Kind)
	}
	body, err := json.Marshal(p)
	if err != nil { // cannot happen with the fields above; never leak it
		body = []byte(`{"type":"` + DefaultBaseURL + `/unexpected","title":"Unexpected error","status":500,"kind":"unexpected"}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	for k, vs := range p.Header {
		k = http.CanonicalHeaderKey(k)
		if k == "Set-Cookie" || k == "Vary" {
			// Lists the response builds from many parts (a refreshed
			// session's cookies, Vary: Authorization, Cookie): added to.
			h[k] = append(h[k], vs...)
			continue
		}
		// Any other header of the problem replaces the response's (e.g. a
		// router's own Allow): one Allow, one Retry-After.
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Type", MediaType)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}

// Write sends p with the default [Writer].
func Write(w http.ResponseWriter, p *Problem) { Writer{}.Write(w, p) }

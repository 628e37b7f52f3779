package dataapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Error is an answer in PostgREST's error shape: {code, message, details,
// hint}. Code is a PGRST code of the data API or the SQLSTATE of a
// Postgres error; Status is the HTTP status PostgREST answers it with.
// It is what supabase-js and the other Supabase clients read.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is a PGRST code or a SQLSTATE.
	Code string
	// Message is Postgres's or the API's message.
	Message string
	// Details and Hint explain further; empty renders null.
	Details, Hint string
	// detailsJSON, when set, is answered as details instead (PGRST201's
	// array of the candidate relationships).
	detailsJSON any
	header      http.Header
	cause       error
}

// Error returns the code and message, for logs.
func (e *Error) Error() string { return "dataapi: " + e.Code + ": " + e.Message }

// Unwrap returns the cause (a Postgres error, a db error), for logs and
// errors.Is; it is never sent.
func (e *Error) Unwrap() error { return e.cause }

// MarshalJSON renders the PostgREST shape with null for empty details and
// hint.
func (e *Error) MarshalJSON() ([]byte, error) {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	var details any = nullable(e.Details)
	if e.detailsJSON != nil {
		details = e.detailsJSON
	}
	return json.Marshal(struct {
		Code    string  `json:"code"`
		Details any     `json:"details"`
		Hint    *string `json:"hint"`
		Message string  `json:"message"`
	}{e.Code, details, nullable(e.Hint), e.Message})
}

func apiErr(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

func (e *Error) withDetails(d string) *Error { e.Details = d; return e }
func (e *Error) withHint(h string) *Error    { e.Hint = h; return e }

// parseErr is PGRST100: a query string the grammar does not read.
func parseErr(what, details string) *Error {
	return apiErr(http.StatusBadRequest, "PGRST100", "\"failed to parse "+what+"\"").withDetails(details)
}

// writeError writes e with its status.
func writeError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	for k, vs := range e.header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	body, _ := json.Marshal(e)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// toError translates any error of a request into the PostgREST shape.
// Postgres errors keep Postgres's own message, detail and hint (as
// PostgREST forwards them; never the statement), with PostgREST's status
// for the SQLSTATE; anon is whether the caller ran as anon (42501 is then
// 401, as PostgREST answers it). Errors of the pool and budgets keep the
// status the native routes answer (503 or 429 with Retry-After).
func toError(err error, anon bool) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code != "57014" && pgErr.Code != "25P03" {
		return &Error{Status: pgStatus(pgErr.Code, anon), Code: pgErr.Code, Message: pgErr.Message,
			Details: pgErr.Detail, Hint: pgErr.Hint, cause: err}
	}
	if p, ok := problem.As(err); ok { // a hook's or the authorizer's refusal
		out := &Error{Status: p.Status, Code: string(p.Code), Message: p.Detail, header: p.Header, cause: err}
		if out.Code == "" {
			out.Code = "PGRST000"
		}
		if out.Status == 0 {
			out.Status = http.StatusForbidden
		}
		if p.Permission != "" {
			out.Details = "permission " + p.Permission
		}
		if p.Approval != nil && p.Approval.ID != "" {
			out.Details = strings.TrimPrefix(out.Details+", approval "+p.Approval.ID, ", ")
			out.Hint = "The approval " + p.Approval.ID + " must be granted first; send the request again once it is."
		}
		return out
	}
	if errors.Is(err, db.ErrRoleNotAllowed) {
		return &Error{Status: http.StatusForbidden, Code: "PGRST303", Message: "The token's role is not allowed here.", cause: err}
	}
	// Everything else (pool busy, per-caller share, timeouts, connection
	// lost, cancelled) answers as the native routes do, in this shape.
	p, _ := problem.As(rest.DBProblem(err))
	out := &Error{Status: p.Status, Code: "PGRST000", Message: p.Detail, header: p.Header, cause: err}
	if out.Status == 0 {
		out.Status = http.StatusInternalServerError
	}
	switch {
	case errors.Is(err, db.ErrPoolBusy):
		out.Code = "PGRST003"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		out.Code = "PGRST003"
	case pgErr != nil:
		out.Code = pgErr.Code
	case out.Status == http.StatusTooManyRequests:
		out.Code = "PGRST003"
	}
	if out.Status == http.StatusInternalServerError {
		out.Message = "The server could not complete the request."
	}
	return out
}

// pgStatus is PostgREST's HTTP status of a SQLSTATE.
func pgStatus(code string, anon bool) int {
	switch code {
	case "23503", "23505":
		return http.StatusConflict
	case "25006":
		return http.StatusMethodNotAllowed
	case "53400":
		return http.StatusInternalServerError
	case "P0001":
		return http.StatusBadRequest
	case "42883", "42P01":
		return http.StatusNotFound
	case "42P17":
		return http.StatusInternalServerError
	case "42501":
		if anon {
			return http.StatusUnauthorized
		}
		return http.StatusForbidden
	}
	if len(code) < 2 {
		return http.StatusInternalServerError
	}
	switch code[:2] {
	case "08", "53":
		return http.StatusServiceUnavailable
	case "09", "25", "2D", "38", "39", "3B", "40", "54", "55", "57", "58", "F0", "HV", "P0", "XX":
		return http.StatusInternalServerError
	case "0L", "0P", "28":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

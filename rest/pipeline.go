package rest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// Call is one request to a resource's pipeline, independent of HTTP. The
// HTTP handler and the MCP adapter both build Calls and run [Resource.Do].
type Call struct {
	// Operation is the CRUD operation or the action name.
	Operation Operation
	// Key is the raw key text of an item operation or item action.
	Key string
	// Body is the raw JSON body (create, update, actions); nil for none.
	// The caller enforces size limits ([Options.MaxBodyBytes] over HTTP).
	Body []byte
	// Query holds list parameters or an action's query parameters.
	Query url.Values
	// Auth is the caller. An invalid state is refused with 401; the zero
	// value is treated as anon.
	Auth authctx.Auth
	// Request is the HTTP request when there is one (handed to hooks).
	Request *http.Request
	// RequestID names the request in logs and unexpected-error bodies;
	// drawn at random when empty and needed.
	RequestID string
}

// Result is the successful outcome of a [Call].
type Result struct {
	// Status is the HTTP status (200, 201, 204 or an action's status).
	Status int
	// Body is the response body; nil for 204. It is JSON unless an action
	// returned a *Response with another ContentType.
	Body []byte
	// ContentType is the media type of Body ("application/json").
	ContentType string
	// Header holds extra response headers (from an action's *Response).
	Header http.Header
	// Key is the key of the created row (text form) for create, when the
	// key column is selected; the HTTP handler derives Location from it.
	Key string
}

const jsonType = "application/json"

// hookError marks an error returned by a hook, authorizer or action
// handler: a problem is sent as is, anything else is unexpected (never
// translated as a database error).
type hookError struct{ err error }

// Error returns the hook's error text (for logs only).
func (e *hookError) Error() string { return e.err.Error() }

// Unwrap returns the hook's error.
func (e *hookError) Unwrap() error { return e.err }

func hookErr(err error) error {
	if err == nil {
		return nil
	}
	return &hookError{err}
}

// Do runs one call through the pipeline: parse and validate key, body and
// query → fetch the row under RLS (get, update, delete, item actions; 404
// if hidden) → authorizer → Hooks.AuthorizeFunc → Before* hook →
// repository → After* hook, in one caller-bound transaction (or one read
// round trip for get and list without permissions and hooks).
//
// The error is always a *problem.Problem. Unexpected errors and panics are
// logged with the request id and returned as a 500 of kind unexpected
// that reveals nothing internal.
func (r *Resource) Do(ctx context.Context, call *Call) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, r.unexpected(call, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			return
		}
		if err != nil {
			p := *r.toProblem(call, err) // a copy: hooks may return shared problem values
			if p.Kind == problem.KindUnexpected && p.RequestID == "" {
				p.RequestID = call.requestID()
				r.log.Error("rest: unexpected error", "request_id", p.RequestID, "table", r.table,
					"operation", string(call.Operation), "error", err)
			}
			res, err = nil, &p
		}
	}()
	return r.do(ctx, call)
}

// toProblem is the one translation point for errors of the pipeline.
func (r *Resource) toProblem(call *Call, err error) *problem.Problem {
	var he *hookError
	if errors.As(err, &he) {
		if p, ok := problem.As(he.err); ok {
			return p
		}
		return r.unexpected(call, err)
	}
	if errors.Is(err, ErrNotFound) {
		return notFound()
	}
	if p, ok := problem.As(err); ok {
		return p
	}
	if p, ok := problem.As(db.Problem(err)); ok {
		if p.Kind == problem.KindUnexpected {
			p.RequestID = call.requestID()
			r.log.ErrorContext(context.Background(), "rest: unexpected error", "request_id", call.RequestID,
				"table", r.table, "operation", string(call.Operation), "error", err)
		}
		return p
	}
	return r.unexpected(call, err)
}

func (r *Resource) unexpected(call *Call, err error) *problem.Problem {
	r.log.Error("rest: unexpected error", "request_id", call.requestID(), "table", r.table,
		"operation", string(call.Operation), "error", err)
	p := problem.New(problem.KindUnexpected, "The server could not complete the request.").WithCause(err)
	p.RequestID = call.RequestID
	return p
}

// requestID returns the call's request id, drawing one on first use (only
// hooks and errors need it, so the hot path does not pay for it).
func (c *Call) requestID() string {
	if c.RequestID == "" {
		c.RequestID = newRequestID()
	}
	return c.RequestID
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *Resource) do(ctx context.Context, call *Call) (*Result, error) {
	op := call.Operation
	var ba *boundAction
	if op.IsCRUD() {
		if !r.ops[op] {
			allow := r.allowCRUD[0]
			if op.Item() {
				allow = r.allowCRUD[1]
			}
			return nil, methodNotAllowed(allow)
		}
	} else if ba = r.actions[string(op)]; ba == nil {
		return nil, routeNotFound()
	}
	switch call.Auth.Kind {
	case authctx.KindInvalid:
		return nil, invalidCaller()
	case "":
		call.Auth = authctx.Anon(authctx.ReasonNone)
	}
	caller := authctx.AuthContext(call.Auth)

	t := &Target{Query: call.Query}
	if op.Item() || (ba != nil && ba.item) {
		k, err := r.parseKey(call.Key)
		if err != nil {
			return nil, err
		}
		t.ID = k
	}

	switch op {
	case OpList:
		lq, err := r.parseList(call.Query)
		if err != nil {
			return nil, err
		}
		return r.list(ctx, call, caller, t, lq)
	case OpGet:
		return r.get(ctx, call, caller, t)
	case OpCreate, OpUpdate:
		row, err := r.parseBody(op, call.Body)
		if err != nil {
			return nil, err
		}
		t.Data = row
		return r.write(ctx, call, caller, t)
	case OpDelete:
		return r.write(ctx, call, caller, t)
	}
	return r.action(ctx, call, caller, t, ba)
}

// newCtx builds the hook context of a call.
func (r *Resource) newCtx(ctx context.Context, call *Call, caller authctx.Context, q db.Querier) *Ctx {
	return &Ctx{Context: ctx, DB: q, Table: r.table, Request: call.Request, Caller: caller,
		Auth: call.Auth, Operation: call.Operation, RequestID: call.requestID()}
}

// permission returns the permission key of an operation or action.
func (r *Resource) permission(op Operation) string {
	if a := r.actions[string(op)]; a != nil && !op.IsCRUD() {
		return a.Permission
	}
	return r.perms[op]
}

// check asks the authorizer for one request; a denial is a problem.
func (r *Resource) check(c *Ctx, perm string, t *Target) error {
	if perm == "" {
		return nil
	}
	if r.authz == nil {
		return problem.PermissionDenied(perm)
	}
	d, err := r.authz.Authorize(c, &AuthzRequest{Permission: perm, Table: r.table, Operation: c.Operation,
		Key: t.ID, Row: t.Row, Data: t.Data, Caller: c.Caller, DB: c.DB})
	if err != nil {
		return hookErr(err)
	}
	return decisionProblem(perm, d)
}

func decisionProblem(perm string, d Decision) error {
	switch d.Effect {
	case Allow:
		return nil
	case NeedsApproval:
		return problem.ApprovalRequired(perm, d.ApprovalID)
	}
	return problem.PermissionDenied(perm)
}

// fetch reads the addressed row under RLS into t.Row.
func (r *Resource) fetch(c *Ctx, t *Target) (json.RawMessage, error) {
	raw, err := r.repo.Get(c, c.DB, t.ID)
	if err != nil {
		return nil, err
	}
	row, err := decodeRow(raw)
	if err != nil {
		return nil, err
	}
	t.Row = row
	return raw, nil
}

func (r *Resource) get(ctx context.Context, call *Call, caller authctx.Context, t *Target) (*Result, error) {
	perm := r.perms[OpGet]
	h := &r.hooks
	if perm == "" && h.AuthorizeFunc == nil && h.AfterGetFunc == nil {
		var raw json.RawMessage
		err := r.d.Read(ctx, caller, func(q db.Querier) error {
			var err error
			raw, err = r.repo.Get(ctx, q, t.ID)
			return err
		})
		if err != nil {
			return nil, err
		}
		return &Result{Status: http.StatusOK, Body: raw, ContentType: jsonType}, nil
	}
	var body []byte
	err := r.d.Tx(ctx, caller, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		raw, err := r.fetch(c, t)
		if err != nil {
			return err
		}
		if err := r.check(c, perm, t); err != nil {
			return err
		}
		if h.AuthorizeFunc != nil {
			if err := h.AuthorizeFunc(c, OpGet, t); err != nil {
				return hookErr(err)
			}
		}
		if h.AfterGetFunc == nil {
			body = raw
			return nil
		}
		out, err := h.AfterGetFunc(c, t.Row)
		if err != nil {
			return hookErr(err)
		}
		body, err = marshal(out)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Result{Status: http.StatusOK, Body: body, ContentType: jsonType}, nil
}

func (r *Resource) write(ctx context.Context, call *Call, caller authctx.Context, t *Target) (*Result, error) {
	op := call.Operation
	perm := r.perms[op]
	h := &r.hooks
	needRow := op != OpCreate && (perm != "" || h.AuthorizeFunc != nil ||
		(op == OpUpdate && h.BeforeUpdateFunc != nil) || (op == OpDelete && h.BeforeDeleteFunc != nil))
	res := &Result{Status: http.StatusOK, ContentType: jsonType}
	err := r.d.Tx(ctx, caller, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		if needRow {
			if _, err := r.fetch(c, t); err != nil {
				return err
			}
		}
		if err := r.check(c, perm, t); err != nil {
			return err
		}
		if h.AuthorizeFunc != nil {
			if err := h.AuthorizeFunc(c, op, t); err != nil {
				return hookErr(err)
			}
		}
		var raw json.RawMessage
		var err error
		switch op {
		case OpCreate:
			values := t.Data
			if h.BeforeCreateFunc != nil {
				if values, err = h.BeforeCreateFunc(c, values); err != nil {
					return hookErr(err)
				}
				if err := r.checkHookValues(values); err != nil {
					return err
				}
			}
			if raw, err = r.repo.Create(c, q, values); err != nil {
				return err
			}
			res.Status = http.StatusCreated
			res.Key = r.keyOf(raw)
			if h.AfterCreateFunc != nil {
				return r.after(c, h.AfterCreateFunc, raw, res)
			}
		case OpUpdate:
			values := t.Data
			if h.BeforeUpdateFunc != nil {
				if values, err = h.BeforeUpdateFunc(c, values, t); err != nil {
					return hookErr(err)
				}
				if err := r.checkHookValues(values); err != nil {
					return err
				}
			}
			if raw, err = r.repo.Update(c, q, t.ID, values); err != nil {
				return err
			}
			if h.AfterUpdateFunc != nil {
				return r.after(c, h.AfterUpdateFunc, raw, res)
			}
		case OpDelete:
			if h.BeforeDeleteFunc != nil {
				if err := h.BeforeDeleteFunc(c, t); err != nil {
					return hookErr(err)
				}
			}
			res.Status, res.ContentType = http.StatusNoContent, ""
			return r.repo.Delete(c, q, t.ID)
		}
		res.Body = raw
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// after runs an After hook on a written row and renders its output.
func (r *Resource) after(c *Ctx, f func(*Ctx, Row) (any, error), raw json.RawMessage, res *Result) error {
	row, err := decodeRow(raw)
	if err != nil {
		return err
	}
	out, err := f(c, row)
	if err != nil {
		return hookErr(err)
	}
	res.Body, err = marshal(out)
	return err
}

// checkHookValues refuses values from a Before hook naming no column.
func (r *Resource) checkHookValues(values Row) error {
	if len(values) == 0 && values == nil {
		return hookErr(errors.New("before hook returned nil values"))
	}
	for k := range values {
		if _, ok := r.byName[k]; !ok {
			return hookErr(fmt.Errorf("before hook returned unknown column %q", k))
		}
	}
	return nil
}

func (r *Resource) list(ctx context.Context, call *Call, caller authctx.Context, t *Target, lq *ListQuery) (*Result, error) {
	perm := r.perms[OpList]
	h := &r.hooks
	if perm == "" && h.AuthorizeFunc == nil && h.AfterListFunc == nil {
		var body []byte
		err := r.d.Read(ctx, caller, func(q db.Querier) error {
			rp, err := r.repo.List(ctx, q, lq)
			if err != nil {
				return err
			}
			body, err = r.renderPage(rp, lq)
			return err
		})
		if err != nil {
			return nil, err
		}
		return &Result{Status: http.StatusOK, Body: body, ContentType: jsonType}, nil
	}
	var body []byte
	err := r.d.Tx(ctx, caller, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		if h.AuthorizeFunc != nil {
			if err := h.AuthorizeFunc(c, OpList, t); err != nil {
				return hookErr(err)
			}
		}
		rp, err := r.repo.List(c, q, lq)
		if err != nil {
			return err
		}
		page := &Page{Count: rp.Count}
		if page.Items, err = decodeItems(rp); err != nil {
			return err
		}
		if rp.Next != nil {
			cur, err := r.signCursor(lq, rp.Next)
			if err != nil {
				return err
			}
			page.NextCursor = &cur
		}
		if perm != "" {
			if err := r.filterRows(c, perm, t, page); err != nil {
				return err
			}
		}
		var out any = page
		if h.AfterListFunc != nil {
			if out, err = h.AfterListFunc(c, page); err != nil {
				return hookErr(err)
			}
		}
		body, err = marshal(out)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Result{Status: http.StatusOK, Body: body, ContentType: jsonType}, nil
}

// filterRows asks the authorizer about every row of the page in one batch
// and drops denied rows; next_cursor and count stay as queried.
func (r *Resource) filterRows(c *Ctx, perm string, t *Target, page *Page) error {
	if r.authz == nil {
		page.Items = page.Items[:0]
		return nil
	}
	if len(page.Items) == 0 {
		return nil
	}
	ds, err := r.authz.AuthorizeRows(c, &AuthzRequest{Permission: perm, Table: r.table, Operation: OpList,
		Caller: c.Caller, DB: c.DB}, page.Items)
	if err != nil {
		return hookErr(err)
	}
	if len(ds) != len(page.Items) {
		return hookErr(fmt.Errorf("authorizer returned %d decisions for %d rows", len(ds), len(page.Items)))
	}
	kept := page.Items[:0]
	for i, row := range page.Items {
		if ds[i].Effect == Allow {
			kept = append(kept, row)
		}
	}
	page.Items = kept
	return nil
}

// renderPage writes a raw page without decoding its rows.
func (r *Resource) renderPage(rp *RawPage, lq *ListQuery) ([]byte, error) {
	n := len(rp.ItemsJSON) + 40
	for _, it := range rp.Items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n+128)
	b = append(b, `{"items":`...)
	if rp.ItemsJSON != nil {
		b = append(b, rp.ItemsJSON...)
	} else {
		b = append(b, '[')
		for i, it := range rp.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, it...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"next_cursor":`...)
	if rp.Next != nil {
		cur, err := r.signCursor(lq, rp.Next)
		if err != nil {
			return nil, err
		}
		b = strconv.AppendQuote(b, cur)
	} else {
		b = append(b, "null"...)
	}
	if rp.Count != nil {
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, *rp.Count, 10)
	}
	return append(b, '}'), nil
}

func (r *Resource) action(ctx context.Context, call *Call, caller authctx.Context, t *Target, ba *boundAction) (*Result, error) {
	in := actionCall{id: t.ID}
	if len(bytes.TrimSpace(call.Body)) > 0 {
		if ba.Input == nil {
			return nil, badBody("This action takes no body.")
		}
		v, err := decodeJSON(call.Body)
		if err != nil {
			return nil, err
		}
		if errs := ba.input.check(v); errs != nil {
			return nil, schemaFailed("body", errs)
		}
		if m, ok := v.(map[string]any); ok {
			t.Data = Row(m)
		}
		in.body = call.Body
	} else if ba.input != nil {
		if errs := ba.input.check(nil); errs != nil {
			return nil, badBody("This action requires a JSON body.")
		}
	}
	if ba.query != nil {
		qv, err := ba.convertQuery(call.Query)
		if err != nil {
			return nil, err
		}
		if errs := ba.query.check(qv); errs != nil {
			return nil, schemaFailed("query", errs)
		}
		in.query = qv
	}
	res := &Result{Status: ba.Status, ContentType: jsonType}
	err := r.d.Tx(ctx, caller, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		if ba.item {
			if _, err := r.fetch(c, t); err != nil {
				return err
			}
			in.row = t.Row
		}
		if err := r.check(c, ba.Permission, t); err != nil {
			return err
		}
		if r.hooks.AuthorizeFunc != nil {
			if err := r.hooks.AuthorizeFunc(c, call.Operation, t); err != nil {
				return hookErr(err)
			}
		}
		out, err := ba.run(c, in)
		if err != nil {
			return hookErr(err)
		}
		if resp, ok := out.(*Response); ok && resp != nil {
			res.Status, res.Header, res.Body, res.ContentType = resp.Status, resp.Header, resp.Body, resp.ContentType
			if res.Status == 0 {
				res.Status = http.StatusOK
			}
			return nil
		}
		if res.Status == http.StatusNoContent {
			return nil
		}
		res.Body, err = marshal(out)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.Status == http.StatusNoContent {
		res.Body, res.ContentType = nil, ""
	}
	return res, nil
}

// convertQuery turns query parameters into JSON values typed by the
// action's query schema, so "?n=3" validates against {"type":"integer"}.
func (ba *boundAction) convertQuery(q url.Values) (map[string]any, error) {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		if len(vs) == 0 {
			continue
		}
		typ := ba.qtypes[k]
		if len(typ) > 6 && typ[:6] == "array:" {
			arr := make([]any, 0, len(vs))
			for _, v := range vs {
				x, err := convertScalar(k, typ[6:], v)
				if err != nil {
					return nil, err
				}
				arr = append(arr, x)
			}
			out[k] = arr
			continue
		}
		if typ == "array" {
			arr := make([]any, len(vs))
			for i, v := range vs {
				arr[i] = v
			}
			out[k] = arr
			continue
		}
		x, err := convertScalar(k, typ, vs[0])
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

func convertScalar(param, typ, v string) (any, error) {
	switch typ {
	case "integer":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return nil, badParam(param, "must be an integer")
		}
		return json.Number(v), nil
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return nil, badParam(param, "must be a number")
		}
		return json.Number(v), nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badParam(param, "must be true or false")
		}
		return b, nil
	}
	return v, nil
}

// marshal renders a hook or action output.
func marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return x, nil
	case nil:
		return []byte("null"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, hookErr(fmt.Errorf("encode response: %w", err))
	}
	return b, nil
}

// decodeJSON decodes one JSON value with numbers kept exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badBody("The body is not valid JSON.")
	}
	if dec.More() {
		return nil, badBody("The body holds more than one JSON value.")
	}
	if _, err := dec.Token(); err == nil {
		return nil, badBody("The body holds more than one JSON value.")
	}
	return v, nil
}

// decodeItems decodes the rows of a repository page.
func decodeItems(rp *RawPage) ([]Row, error) {
	if rp.ItemsJSON != nil {
		dec := json.NewDecoder(bytes.NewReader(rp.ItemsJSON))
		dec.UseNumber()
		var rows []Row
		if err := dec.Decode(&rows); err != nil {
			return nil, fmt.Errorf("decode page: %w", err)
		}
		if rows == nil {
			rows = []Row{}
		}
		return rows, nil
	}
	rows := make([]Row, 0, len(rp.Items))
	for _, raw := range rp.Items {
		row, err := decodeRow(raw)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// decodeRow decodes a row produced by the repository.
func decodeRow(raw json.RawMessage) (Row, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode row: %w", err)
	}
	return Row(m), nil
}

// keyOf extracts the key's text from a row, "" when not selected.
func (r *Resource) keyOf(raw json.RawMessage) string {
	if _, ok := r.selName[r.key.Name]; !ok {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	v := m[r.key.Name]
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String()
	}
	return ""
}

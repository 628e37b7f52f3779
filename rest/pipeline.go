package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// Call is one request to a resource's pipeline, independent of HTTP. The
// HTTP handler and the MCP adapter both build Calls and run [Resource.Do].
type Call struct {
	// Operation is the CRUD operation or the action name.
	Operation Operation
	// Key is the raw key text of an item operation or item action.
	Key string
	// Body is the raw JSON body (create, update, actions); nil for none.
	// The caller enforces size limits ([Config.MaxBodyBytes] over HTTP).
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
	// Position asks a read (get, list, a read-only action) to see the
	// database at least as of this commit position, one that a write
	// answered in Result.Position: with read replicas it then runs on a
	// replica that has replayed past it, or on the primary. Zero asks for
	// nothing; writes ignore it.
	Position db.Position

	deferred *deferral // a deferred decision of the current attempt (run)
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
	// Position is where the primary's log stood after a write committed
	// (create, update, delete, an action not declared ReadOnly), when the
	// DB has read replicas; zero otherwise. Hand it back in Call.Position
	// to read the write ([PositionHeader] over HTTP).
	Position db.Position
}

const jsonType = "application/json"

// Do runs one call through the pipeline: parse and validate key, body and
// query → fetch the row under RLS (get, update, delete, item actions; 404
// if hidden) → authorizer → Hooks.AuthorizeFunc → Before* hook →
// repository → After* hook, in one caller-bound transaction (or one read
// round trip for get and list without permissions and hooks).
//
// The error is always a *problem.Problem. Unexpected errors and panics are
// logged with the request id and returned as a 500 of kind unexpected
// that reveals nothing internal.
func (r *Resource) Do(ctx context.Context, call *Call) (*Result, error) {
	return r.run(ctx, call, nil)
}

// run is [Resource.Do] after prepare, which completes the call from its
// HTTP request (see serve). It is the one place where the panics of a
// request are recovered, the pipeline's and prepare's (Config.Caller,
// reading the body): logged and answered as a 500 problem; a panic with
// http.ErrAbortHandler in prepare is left to net/http.
//
// A deferred decision (Decision.Then) is a value the authorizer check
// leaves in call.deferred while its refusal rolls the transaction back;
// run then calls Then and, on Allow, runs the pipeline once more.
func (r *Resource) run(ctx context.Context, call *Call, prepare func(*Call) error) (res *Result, err error) {
	var written *db.Position // a write's commit position (with replicas)
	preparing := prepare != nil
	defer func() {
		if p := recover(); p != nil {
			if preparing && p == http.ErrAbortHandler {
				panic(p)
			}
			res, err = nil, r.unexpected(call, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			return
		}
		if err == nil && res != nil && written != nil {
			res.Position = *written
		}
		if _, ok := err.(*problem.Problem); ok && preparing {
			return // prepare's own answer (a bad query or body, the Caller's problem)
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
	if preparing {
		if err := prepare(call); err != nil {
			return nil, err
		}
		preparing = false
	}
	if r.d.HasReplicas() {
		ctx, written = r.consistency(ctx, call)
	}
	res, err = r.do(ctx, call)
	for retried := false; call.deferred != nil; retried = true {
		dd := call.deferred
		call.deferred = nil
		// The request's transaction has ended and its connection is back
		// in the pool: only now may the authorizer's follow-up use one.
		d, derr := dd.Then(ctx)
		if derr != nil {
			return nil, hookErr(derr)
		}
		if d.Effect != Allow || retried {
			if d.Effect == Allow {
				d = Decision{Effect: Deny, ApprovalID: d.ApprovalID, Reason: "allowed again after a retry"}
			}
			return nil, decisionProblem(dd.perm, d)
		}
		res, err = r.do(ctx, call)
	}
	return res, err
}

// deferral is a deferred decision and the permission it decides.
type deferral struct {
	perm string
	Decision
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
		// The guard's answer: 401 with the cause's code and detail (503
		// while the signing keys have not loaded).
		return nil, authctx.Admit(call.Auth)
	case "":
		call.Auth = authctx.Anon(authctx.ReasonNone)
	}
	caller := call.Auth

	t := &Target{Query: call.Query}
	if op.Item() || (ba != nil && ba.item) {
		k, err := r.parseKey(call.Key)
		if err != nil {
			return nil, err
		}
		t.ID = k
	}

	if adm, ok := r.authz.(Admission); ok && op != OpList {
		if perm := r.permission(op); perm != "" {
			release, err := adm.Admit(ctx, perm)
			if err != nil {
				return nil, hookErr(err)
			}
			defer release()
		}
	}

	switch op {
	case OpList:
		lq, err := r.parseListAs(call.Query, cursorBinding(caller))
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

// newCtx builds the hook context of a call. Hooks, authorizers and
// actions get their own deep copy of the claims (in Ctx.Auth): the
// resolved ones are shared by every request presenting the
// same token, and the transaction already runs with the verified claims.
func (r *Resource) newCtx(ctx context.Context, call *Call, caller authctx.Auth, q db.Querier) *Ctx {
	auth := caller.Clone()
	c := &Ctx{Context: ctx, DB: q, Table: r.table, Request: call.Request,
		Auth: auth, Operation: call.Operation, RequestID: call.requestID(), res: r}
	if ba := r.actions[string(call.Operation)]; ba != nil && !call.Operation.IsCRUD() {
		c.Action = ba.Action
	}
	return c
}

// permission returns the permission key of an operation or action.
func (r *Resource) permission(op Operation) string {
	if a := r.actions[string(op)]; a != nil && !op.IsCRUD() {
		return a.Permission
	}
	return r.perms[op]
}

// check asks the authorizer for one request; a refusal is a problem. A
// deferred decision is kept in call.deferred for run, and refused for now
// (the refusal rolls the transaction back).
func (r *Resource) check(c *Ctx, call *Call, perm string, t *Target) error {
	d, err := r.authorize(c, perm, t)
	if err != nil {
		return err
	}
	if d.deferred() {
		call.deferred = &deferral{perm: perm, Decision: d}
		return decisionProblem(perm, Denied())
	}
	return decisionProblem(perm, d)
}

// authorize returns the authorizer's decision for one request.
func (r *Resource) authorize(c *Ctx, perm string, t *Target) (Decision, error) {
	if perm == "" {
		return Allowed(), nil
	}
	if r.authz == nil {
		return Denied(), nil
	}
	_, span := authzSpan(c, perm, c.Operation, r.table)
	d, err := r.authz.Authorize(c, &AuthzRequest{Permission: perm, Table: r.table, Operation: c.Operation,
		Key: t.ID, Row: t.Row, Data: t.Data, Caller: c.Auth, DB: c.DB})
	telemetry.EndSpan(span, err)
	if err != nil {
		return Decision{}, hookErr(err)
	}
	return d, nil
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

func (r *Resource) get(ctx context.Context, call *Call, caller authctx.Auth, t *Target) (*Result, error) {
	perm := r.perms[OpGet]
	h := &r.hooks
	if perm == "" && h.AuthorizeFunc == nil && h.AfterGetFunc == nil {
		var raw json.RawMessage
		err := r.d.Run(ctx, caller.DBCaller(), readOnly(r.scope(call.Operation)), func(q db.Querier) error {
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
	err := r.d.Run(ctx, caller.DBCaller(), inTx(r.scope(call.Operation)), func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		raw, err := r.fetch(c, t)
		if err != nil {
			return err
		}
		if err := r.check(c, call, perm, t); err != nil {
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

func (r *Resource) write(ctx context.Context, call *Call, caller authctx.Auth, t *Target) (*Result, error) {
	op := call.Operation
	perm := r.perms[op]
	h := &r.hooks
	needRow := op != OpCreate && (perm != "" || h.AuthorizeFunc != nil ||
		(op == OpUpdate && h.BeforeUpdateFunc != nil) || (op == OpDelete && h.BeforeDeleteFunc != nil))
	res := &Result{Status: http.StatusOK, ContentType: jsonType}
	// With no hook and no permission, the write is one statement: it runs
	// like a read, the caller's settings and the statement in one round
	// trip, committed by Postgres when the round trip ends (one implicit
	// transaction). Otherwise hooks and checks share one transaction.
	opts := r.scope(call.Operation)
	opts.Tx = !r.writeIsOneStatement(op)
	err := r.d.Run(ctx, caller.DBCaller(), opts, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		if needRow {
			if _, err := r.fetch(c, t); err != nil {
				return err
			}
		}
		if err := r.check(c, call, perm, t); err != nil {
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
				return r.refusedWrite(c, q, t, needRow, err)
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
			return r.refusedWrite(c, q, t, needRow, r.repo.Delete(c, q, t.ID))
		}
		res.Body = raw
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// writeIsOneStatement reports whether a create, update or delete runs
// one statement: the table repository's (a custom Repository may run
// several, which must share a transaction), with no permission and no hook
// of the operation. (An update or delete that matches no row reads the row
// back afterwards to tell 403 from 404: a second round trip, on the
// failure path only.)
func (r *Resource) writeIsOneStatement(op Operation) bool {
	if _, ok := r.repo.(*tableRepository); !ok || r.perms[op] != "" {
		return false
	}
	return (op == OpCreate || op == OpUpdate || op == OpDelete) && !r.hooks.run(op)
}

// refusedWrite tells a row the caller may not see (ErrNotFound: 404)
// from one they can read but a policy does not let them change: an UPDATE
// or DELETE whose USING clause hides the row matches nothing either, so
// when the row reads back in the same transaction the answer is 403.
// fetched reports that the pipeline already read the row under RLS.
func (r *Resource) refusedWrite(c *Ctx, q db.Querier, t *Target, fetched bool, err error) error {
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	if !fetched {
		if _, gerr := r.repo.Get(c, q, t.ID); gerr != nil {
			return err
		}
	}
	return problem.New(problem.KindForbidden, "You can read this row, but a row-level security policy does not let you "+
		map[Operation]string{OpUpdate: "update", OpDelete: "delete"}[c.Operation]+" it.")
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
	if values == nil {
		return hookErr(errors.New("before hook returned nil values"))
	}
	for k := range values {
		if _, ok := r.byName[k]; !ok {
			return hookErr(fmt.Errorf("before hook returned unknown column %q", k))
		}
	}
	return nil
}

func (r *Resource) list(ctx context.Context, call *Call, caller authctx.Auth, t *Target, lq *ListQuery) (*Result, error) {
	perm := r.perms[OpList]
	h := &r.hooks
	if perm == "" && h.AuthorizeFunc == nil && h.AfterListFunc == nil {
		var body []byte
		err := r.d.Run(ctx, caller.DBCaller(), readOnly(r.scope(call.Operation)), func(q db.Querier) error {
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
	err := r.d.Run(ctx, caller.DBCaller(), inTx(r.scope(call.Operation)), func(q db.Querier) error {
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
	_, span := authzSpan(c, perm, OpList, r.table)
	ds, err := r.authz.AuthorizeRows(c, &AuthzRequest{Permission: perm, Table: r.table, Operation: OpList,
		Caller: c.Auth, DB: c.DB}, page.Items)
	telemetry.EndSpan(span, err)
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

func (r *Resource) action(ctx context.Context, call *Call, caller authctx.Auth, t *Target, ba *boundAction) (*Result, error) {
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
	opts := r.scope(call.Operation)
	opts.Tx, opts.ReadOnly = true, r.replicaAction(ba)
	err := r.d.Run(ctx, caller.DBCaller(), opts, func(q db.Querier) error {
		c := r.newCtx(ctx, call, caller, q)
		if ba.item {
			if _, err := r.fetch(c, t); err != nil {
				return err
			}
			in.row = t.Row
		}
		if err := r.check(c, call, ba.Permission, t); err != nil {
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

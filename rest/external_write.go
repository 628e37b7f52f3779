package rest

import (
	"context"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// WriteCheck is one row of a write that another front (the PostgREST-style
// data API) runs on this resource's table inside its own caller-bound
// transaction: see [Resource.CheckWrite].
type WriteCheck struct {
	// Operation is OpCreate, OpUpdate or OpDelete; OpList or OpGet for a
	// read (only the permission and Hooks.AuthorizeFunc run).
	Operation Operation
	// Auth is the caller.
	Auth authctx.Auth
	// DB is the request's transaction, bound to the caller.
	DB db.Querier
	// Request is the HTTP request, if any.
	Request *http.Request
	// Key is the key of the row (update, delete); nil for create.
	Key any
	// Row is the current row (update, delete), read under RLS; nil for
	// create.
	Row Row
	// Data is the row to insert or the values to set; nil for delete.
	Data Row
}

// CheckWrite runs, for one row, what [Resource.Do] runs before a write's
// statement: the operation's permission check by the authorizer, then
// Hooks.AuthorizeFunc, then the operation's Before hook. It returns the
// values to write (the Before hook's answer, else Data). The error is
// always a *problem.Problem. After hooks do not run: a front that writes
// with its own statement renders the rows itself.
//
// It returns an error when the operation is not served by the resource.
// When the permission's decision needs work outside the transaction
// (Decision.Then) the error is a *DeferredDecision: the front ends its
// transaction, then calls [DeferredDecision.Decide].
func (r *Resource) CheckWrite(ctx context.Context, w *WriteCheck) (Row, error) {
	call := &Call{Operation: w.Operation, Auth: w.Auth, Request: w.Request}
	values, err := r.checkWrite(ctx, call, w)
	if dd := call.deferred; dd != nil {
		return nil, &DeferredDecision{r: r, call: call, dd: dd}
	}
	if err != nil {
		return nil, r.toProblem(call, err)
	}
	return values, nil
}

// DeferredDecision is returned by [Resource.CheckWrite] when the
// authorizer's decision needs work outside the request's transaction
// (Decision.Then), such as recording an approval that must survive the
// refusal.
type DeferredDecision struct {
	r    *Resource
	call *Call
	dd   *deferral
}

// Error says a permission's decision waits for the end of the
// transaction.
func (d *DeferredDecision) Error() string {
	return "rest: the decision on permission " + d.dd.perm + " is deferred past the transaction"
}

// Decide runs the decision's follow-up (Decision.Then), as [Resource.Do]
// does: call it only once the front's transaction has ended and its
// connection is back in the pool. It returns nil when the follow-up
// allows — run the request once more from the start — and otherwise the
// *problem.Problem to answer (APPROVAL_REQUIRED with the approval, or
// PERMISSION_DENIED). retried reports that the request already ran once
// more: an Allow then is answered as a denial.
func (d *DeferredDecision) Decide(ctx context.Context, retried bool) error {
	dec, err := d.dd.Then(ctx)
	if err != nil {
		return d.r.toProblem(d.call, hookErr(err))
	}
	if dec.Effect == Allow && !retried {
		return nil
	}
	if dec.Effect == Allow {
		dec = Decision{Effect: Deny, ApprovalID: dec.ApprovalID, Reason: "allowed again after a retry"}
	}
	return d.r.toProblem(d.call, decisionProblem(d.dd.perm, dec))
}

func (r *Resource) checkWrite(ctx context.Context, call *Call, w *WriteCheck) (Row, error) {
	op := w.Operation
	if !op.IsCRUD() {
		return nil, routeNotFound()
	}
	if !r.ops[op] {
		return nil, methodNotAllowed(r.allowed(op.Item()))
	}
	c := r.newCtx(ctx, call, w.Auth, w.DB)
	t := &Target{ID: w.Key, Row: w.Row, Data: w.Data}
	if err := r.check(c, call, r.perms[op], t); err != nil {
		return nil, err
	}
	h := &r.hooks
	if h.AuthorizeFunc != nil {
		if err := h.AuthorizeFunc(c, op, t); err != nil {
			return nil, hookErr(err)
		}
	}
	values := w.Data
	var err error
	switch op {
	case OpCreate:
		if h.BeforeCreateFunc != nil {
			if values, err = h.BeforeCreateFunc(c, values); err != nil {
				return nil, hookErr(err)
			}
			if err := r.checkHookValues(values); err != nil {
				return nil, err
			}
		}
	case OpUpdate:
		if h.BeforeUpdateFunc != nil {
			if values, err = h.BeforeUpdateFunc(c, values, t); err != nil {
				return nil, hookErr(err)
			}
			if err := r.checkHookValues(values); err != nil {
				return nil, err
			}
		}
	case OpDelete:
		if h.BeforeDeleteFunc != nil {
			if err := h.BeforeDeleteFunc(c, t); err != nil {
				return nil, hookErr(err)
			}
		}
	}
	return values, nil
}

// RowHooked reports whether a write of op runs code per row (the
// authorizer's permission, Hooks.AuthorizeFunc or op's Before hook), so
// that a front writing many rows must call [Resource.CheckWrite] for each.
func (r *Resource) RowHooked(op Operation) bool {
	h := &r.hooks
	switch {
	case r.perms[op] != "" || h.AuthorizeFunc != nil:
		return true
	case op == OpCreate:
		return h.BeforeCreateFunc != nil
	case op == OpUpdate:
		return h.BeforeUpdateFunc != nil
	case op == OpDelete:
		return h.BeforeDeleteFunc != nil
	}
	return false
}

// AfterHook reports whether op has an After hook (AfterList, AfterGet,
// AfterCreate or AfterUpdate): a front answering with its own statement
// runs it with [Resource.AfterRow] or [Resource.AfterPage], or refuses
// the operation, rather than skip the hook.
func (r *Resource) AfterHook(op Operation) bool {
	h := &r.hooks
	switch op {
	case OpList:
		return h.AfterListFunc != nil
	case OpGet:
		return h.AfterGetFunc != nil
	case OpCreate:
		return h.AfterCreateFunc != nil
	case OpUpdate:
		return h.AfterUpdateFunc != nil
	}
	return false
}

// ParseKey parses the text of a key as the resource's routes do (int64
// for integer keys, a checked UUID string, else the text), for
// [WriteCheck.Key]. The error is a *problem.Problem.
func (r *Resource) ParseKey(s string) (any, error) { return r.parseKey(s) }

// Scope returns the database options of op (its statement timeout from
// Config.StatementTimeout or Config.StatementTimeouts), for a front that
// runs op's statements itself; the zero value uses the DB's.
func (r *Resource) Scope(op Operation) db.RunOpts { return r.scope(op) }

// AfterRow runs, for one row another front wrote or read in its own
// transaction (w.DB), what [Resource.Do] runs after the statement: op's
// After hook (OpCreate: Hooks.AfterCreateFunc, OpUpdate:
// Hooks.AfterUpdateFunc, OpGet: Hooks.AfterGetFunc) on w.Row, and
// returns its output, which the front answers in the row's place (w.Row
// itself when op has no After hook). An error rolls the front's write
// back; it is always a *problem.Problem.
func (r *Resource) AfterRow(ctx context.Context, w *WriteCheck) (any, error) {
	h := &r.hooks
	var f func(*Ctx, Row) (any, error)
	switch w.Operation {
	case OpCreate:
		f = h.AfterCreateFunc
	case OpUpdate:
		f = h.AfterUpdateFunc
	case OpGet:
		f = h.AfterGetFunc
	}
	if f == nil {
		return w.Row, nil
	}
	call := &Call{Operation: w.Operation, Auth: w.Auth, Request: w.Request}
	out, err := f(r.newCtx(ctx, call, w.Auth, w.DB), w.Row)
	if err != nil {
		return nil, r.toProblem(call, hookErr(err))
	}
	return out, nil
}

// AfterPage runs Hooks.AfterListFunc on a page another front read in its
// own transaction (w.DB) and returns its output (page itself without the
// hook). The error is always a *problem.Problem.
func (r *Resource) AfterPage(ctx context.Context, w *WriteCheck, page *Page) (any, error) {
	if r.hooks.AfterListFunc == nil {
		return page, nil
	}
	call := &Call{Operation: OpList, Auth: w.Auth, Request: w.Request}
	out, err := r.hooks.AfterListFunc(r.newCtx(ctx, call, w.Auth, w.DB), page)
	if err != nil {
		return nil, r.toProblem(call, hookErr(err))
	}
	return out, nil
}

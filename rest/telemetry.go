package rest

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/tablegate/tablegate/telemetry"
)

// This file gives hooks and the authorizer their own spans when a
// telemetry.Handler serves the request (telemetry.StartSpan is a no-op
// otherwise). Spans name the hook, operation, table and permission —
// never a row or body value.

// hookSpan starts the span of one hook call; the returned Ctx carries it
// so that the hook's statements become its children.
func hookSpan(c *Ctx, hook string) (*Ctx, trace.Span) {
	ctx, span := telemetry.StartSpan(c.Context, "tablegate.hook "+hook,
		telemetry.AttrHook.String(hook), telemetry.AttrOperation.String(string(c.Operation)), telemetry.AttrTable.String(c.Table))
	if ctx == c.Context {
		return c, span
	}
	c2 := *c
	c2.Context = ctx
	return &c2, span
}

// authzSpan starts the span of one authorizer call.
func authzSpan(ctx context.Context, perm string, op Operation, table string) (context.Context, trace.Span) {
	return telemetry.StartSpan(ctx, "tablegate.authorize", telemetry.AttrPermission.String(perm),
		telemetry.AttrOperation.String(string(op)), telemetry.AttrTable.String(table))
}

// tracedHooks wraps every set hook in a span.
func tracedHooks(h Hooks) Hooks {
	if f := h.AuthorizeFunc; f != nil {
		h.AuthorizeFunc = func(c *Ctx, op Operation, t *Target) error {
			c, span := hookSpan(c, "Authorize")
			err := f(c, op, t)
			telemetry.EndSpan(span, err)
			return err
		}
	}
	if f := h.BeforeCreateFunc; f != nil {
		h.BeforeCreateFunc = func(c *Ctx, data Row) (Row, error) {
			c, span := hookSpan(c, "BeforeCreate")
			out, err := f(c, data)
			telemetry.EndSpan(span, err)
			return out, err
		}
	}
	if f := h.BeforeUpdateFunc; f != nil {
		h.BeforeUpdateFunc = func(c *Ctx, data Row, t *Target) (Row, error) {
			c, span := hookSpan(c, "BeforeUpdate")
			out, err := f(c, data, t)
			telemetry.EndSpan(span, err)
			return out, err
		}
	}
	if f := h.BeforeDeleteFunc; f != nil {
		h.BeforeDeleteFunc = func(c *Ctx, t *Target) error {
			c, span := hookSpan(c, "BeforeDelete")
			err := f(c, t)
			telemetry.EndSpan(span, err)
			return err
		}
	}
	if f := h.AfterListFunc; f != nil {
		h.AfterListFunc = func(c *Ctx, page *Page) (any, error) {
			c, span := hookSpan(c, "AfterList")
			out, err := f(c, page)
			telemetry.EndSpan(span, err)
			return out, err
		}
	}
	h.AfterGetFunc = afterSpan(h.AfterGetFunc, "AfterGet")
	h.AfterCreateFunc = afterSpan(h.AfterCreateFunc, "AfterCreate")
	h.AfterUpdateFunc = afterSpan(h.AfterUpdateFunc, "AfterUpdate")
	return h
}

func afterSpan(f func(c *Ctx, row Row) (any, error), name string) func(c *Ctx, row Row) (any, error) {
	if f == nil {
		return nil
	}
	return func(c *Ctx, row Row) (any, error) {
		c, span := hookSpan(c, name)
		out, err := f(c, row)
		telemetry.EndSpan(span, err)
		return out, err
	}
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Plugin fills or checks columns of create and update bodies from the
// verified caller. [Tenant] and [Actor] implement it; applications may
// write their own.
type Plugin interface {
	// Columns lists the columns the plugin writes, and the columns a body
	// may never name (added to [rest.Config.ReadOnly]).
	Columns() (write, readOnly []string)
	// BeforeCreate returns the values to insert. It must not modify data.
	BeforeCreate(c authctx.Auth, data rest.Row) (rest.Row, error)
	// BeforeUpdate returns the values to update. It must not modify data.
	BeforeUpdate(c authctx.Auth, data rest.Row) (rest.Row, error)
}

// ErrNilPlugin is returned by [With] and [NewResource] for a nil plugin, or
// a [Tenant] or [Actor] not built by [NewTenant] or [NewActor].
var ErrNilPlugin = errors.New("plugin: nil or unbuilt plugin")

// With returns a copy of opts (nil: the zero options) with the plugins
// applied in order: their read-only columns join Options.ReadOnly, and the
// BeforeCreateFunc and BeforeUpdateFunc hooks run every plugin, then the
// application's own hook (which sees the filled values), then every plugin
// again, so that no hook can override what a plugin stamps. Errors of
// plugins are problems (403 TENANT_MISMATCH, …) and end the request as is.
// opts is not modified.
func With(opts *rest.Config, plugins ...Plugin) (*rest.Config, error) {
	var o rest.Config
	if opts != nil {
		o = *opts
	}
	if len(plugins) == 0 {
		return &o, nil
	}
	o.ReadOnly = slices.Clone(o.ReadOnly)
	for _, p := range plugins {
		if p == nil || isNilPointer(p) {
			return nil, ErrNilPlugin
		}
		_, ro := p.Columns()
		for _, c := range ro {
			if !slices.Contains(o.ReadOnly, c) {
				o.ReadOnly = append(o.ReadOnly, c)
			}
		}
	}
	ps := slices.Clone(plugins)
	userCreate, userUpdate := o.Hooks.BeforeCreateFunc, o.Hooks.BeforeUpdateFunc
	o.Hooks.BeforeCreateFunc = func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
		v, err := runAll(ps, c.Auth, data, Plugin.BeforeCreate)
		if err != nil || userCreate == nil {
			return v, err
		}
		if v, err = userCreate(c, v); err != nil {
			return nil, err
		}
		return runAll(ps, c.Auth, v, Plugin.BeforeCreate)
	}
	o.Hooks.BeforeUpdateFunc = func(c *rest.Ctx, data rest.Row, t *rest.Target) (rest.Row, error) {
		if len(data) == 0 && userUpdate == nil {
			// What rest answers for an empty body without a hook.
			return nil, problem.New(problem.KindBadRequest, "The body sets no column.")
		}
		v, err := runAll(ps, c.Auth, data, Plugin.BeforeUpdate)
		if err != nil || userUpdate == nil {
			return v, err
		}
		if v, err = userUpdate(c, v, t); err != nil {
			return nil, err
		}
		return runAll(ps, c.Auth, v, Plugin.BeforeUpdate)
	}
	return &o, nil
}

func runAll(ps []Plugin, c authctx.Auth, data rest.Row,
	f func(Plugin, authctx.Auth, rest.Row) (rest.Row, error)) (rest.Row, error) {
	v := data
	for _, p := range ps {
		var err error
		if v, err = f(p, c, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func isNilPointer(p Plugin) bool {
	switch x := p.(type) {
	case *Tenant:
		return x == nil || x.claim == "" || x.column == ""
	case *Actor:
		return x == nil || !x.built
	}
	return false
}

// NewResource applies the plugins to opts with [With], builds the resource
// with [rest.NewResource], and fails, with an error wrapping
// [rest.ErrBuild], when the table lacks a column a plugin writes. A
// resource whose rows belong to the caller's tenant:
//
//	tenant, err := plugin.NewTenant(&plugin.TenantConfig{Claim: "app_metadata.org_id"})
//	todos, err := plugin.NewResource(ctx, d, "todos", opts, tenant, plugin.NewActor(nil))
func NewResource(ctx context.Context, d *db.DB, table string, opts *rest.Config, plugins ...Plugin) (*rest.Resource, error) {
	o, err := With(opts, plugins...)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: %w", rest.ErrBuild, table, err)
	}
	r, err := rest.NewResource(ctx, d, table, o)
	if err != nil {
		return nil, err
	}
	cols := r.Describe().AllColumns
	for _, p := range plugins {
		write, _ := p.Columns()
		for _, w := range write {
			if !slices.ContainsFunc(cols, func(c rest.Column) bool { return c.Name == w }) {
				return nil, fmt.Errorf("%w: table %q has no column %q for %T", rest.ErrBuild, table, w, p)
			}
		}
	}
	return r, nil
}

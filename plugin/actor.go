package plugin

import (
	"maps"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
)

// Default actor columns.
const (
	DefaultCreatedByColumn = "created_by"
	DefaultUpdatedByColumn = "updated_by"
)

// NoColumn, as an [ActorConfig] column, turns that stamp off.
const NoColumn = "-"

// ActorConfig configures the actor plugin. The zero value stamps
// created_by and updated_by.
type ActorConfig struct {
	// CreatedBy is stamped on create. Default [DefaultCreatedByColumn];
	// [NoColumn] turns it off.
	CreatedBy string
	// UpdatedBy is stamped on create and update. Default
	// [DefaultUpdatedByColumn]; [NoColumn] turns it off.
	UpdatedBy string
	// ServiceValueFunc returns the value stamped for a service caller
	// (nil: the key name). Return nil to store NULL, e.g. for a uuid
	// column that references auth.users.
	ServiceValueFunc func(keyName string) any
}

// Actor stamps created-by and updated-by columns from the actor, never from
// the body. Build it with [NewActor]. An Actor is immutable and safe for
// concurrent use.
type Actor struct {
	createdBy, updatedBy string
	service              func(string) any
	built                bool
}

// NewActor returns the actor plugin for cfg (nil for the defaults).
func NewActor(cfg *ActorConfig) *Actor {
	if cfg == nil {
		cfg = &ActorConfig{}
	}
	a := &Actor{createdBy: cfg.CreatedBy, updatedBy: cfg.UpdatedBy, service: cfg.ServiceValueFunc, built: true}
	if a.createdBy == "" {
		a.createdBy = DefaultCreatedByColumn
	}
	if a.updatedBy == "" {
		a.updatedBy = DefaultUpdatedByColumn
	}
	if a.createdBy == NoColumn {
		a.createdBy = ""
	}
	if a.updatedBy == NoColumn {
		a.updatedBy = ""
	}
	return a
}

// Columns returns the stamped columns (created-by first, without the
// turned-off ones), both as written and as read-only: a body naming them
// answers 400. It implements [Plugin].
func (a *Actor) Columns() (write, readOnly []string) {
	for _, c := range []string{a.createdBy, a.updatedBy} {
		if c != "" {
			write = append(write, c)
		}
	}
	return write, write
}

// Value returns what the plugin stamps for the caller: the user id (also
// for anonymous sign-ins), the service value, or nil (NULL) for a caller
// without a session.
func (a *Actor) Value(c authctx.Auth) any {
	switch c.Actor().Type {
	case authctx.KindUser:
		if c.Actor().ID == "" {
			return nil
		}
		return c.Actor().ID
	case authctx.KindService:
		if a.service != nil {
			return a.service(c.Actor().ID)
		}
		return c.Actor().ID
	}
	return nil
}

// BeforeCreate returns the create body with created-by and updated-by set
// to the actor, replacing whatever it held. It never fails. data is not
// modified.
func (a *Actor) BeforeCreate(c authctx.Auth, data rest.Row) (rest.Row, error) {
	out := maps.Clone(data)
	if out == nil {
		out = rest.Row{}
	}
	v := a.Value(c)
	if a.createdBy != "" {
		out[a.createdBy] = v
	}
	if a.updatedBy != "" {
		out[a.updatedBy] = v
	}
	return out, nil
}

// BeforeUpdate returns the update body with updated-by set to the actor
// and created-by removed (it never changes after create). It never fails.
// data is not modified.
func (a *Actor) BeforeUpdate(c authctx.Auth, data rest.Row) (rest.Row, error) {
	out := maps.Clone(data)
	if out == nil {
		out = rest.Row{}
	}
	if a.createdBy != "" {
		delete(out, a.createdBy)
	}
	if a.updatedBy != "" {
		out[a.updatedBy] = a.Value(c)
	}
	return out, nil
}

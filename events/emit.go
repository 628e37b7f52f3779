package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablegate/tablegate/rest"
)

// ErrUndeclared is returned by [Emit] for an event name the running action
// does not list in its Emits, or when no action is running (a hook of a
// CRUD operation). Declare the name in rest.ActionDef.Emits.
var ErrUndeclared = errors.New("events: event not declared by the running action")

// MaxPayloadBytes caps the JSON of an emitted payload (64 KiB).
const MaxPayloadBytes = 64 << 10

// EmitOpts are the optional parts of an emitted event.
type EmitOpts struct {
	// Key is the key of the row the event is about (an int64, a string, or
	// anything fmt prints as the key's text). With a key, the event reaches
	// a subscriber only while that subscriber can read the row (checked in
	// Postgres as the subscriber); without one, it reaches the subscribers
	// of the writer's active tenant.
	Key any
}

// Emit writes the event name with payload into the outbox in the request's
// own transaction (c.DB): it is delivered when the transaction commits and
// never when it rolls back. The tenant (the caller's active tenant) and the
// actor (the sub claim) are read from the caller's claims in Postgres.
//
// Emit only accepts names the running action declares in its Emits; any
// other name, or a call outside an action, returns an error wrapping
// [ErrUndeclared] — return it from the handler and the request fails
// instead of silently dropping the event. payload is marshalled to JSON
// (at most [MaxPayloadBytes]); nil emits a null payload.
//
// Only service_role may execute tablegate.emit_event, so that callers with
// a SQL path as anon or authenticated cannot forge events: Emit switches
// the transaction to service_role for its one statement and back to the
// caller's role. The role tablegate connects as must be a member of
// service_role (tablegate's migrations grant it to the migrating role).
func Emit(c *rest.Ctx, name string, payload any, opts *EmitOpts) error {
	if c == nil || c.DB == nil {
		return fmt.Errorf("%w: no request context", ErrUndeclared)
	}
	if c.Action == nil {
		return fmt.Errorf("%w: %q emitted outside an action (operation %s)", ErrUndeclared, name, c.Operation)
	}
	if !slices.Contains(c.Action.Emits, name) {
		return fmt.Errorf("%w: action %s does not declare %q in Emits", ErrUndeclared, c.Operation, name)
	}
	var raw []byte
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return fmt.Errorf("events: encode payload of %q: %w", name, err)
		}
		if len(b) > MaxPayloadBytes {
			return fmt.Errorf("events: payload of %q is %d bytes, above %d", name, len(b), MaxPayloadBytes)
		}
		raw = b
	}
	var key *string
	if opts != nil && opts.Key != nil {
		k := keyText(opts.Key)
		key = &k
	}
	// Only service_role may execute tablegate.emit_event (a caller with a
	// SQL path as anon or authenticated must not forge events). The
	// request's transaction runs as the caller's role, so switch it to
	// service_role (the connecting role is a member) for the emitting
	// statement only: Postgres checks EXECUTE when the statement starts,
	// and the same statement sets the caller's role back. If it fails, the
	// transaction is aborted and runs nothing more.
	var prev string
	if err := c.DB.QueryRow(c, switchRoleSQL).Scan(&prev, nil); err != nil {
		return fmt.Errorf("events: emit %q: %w", name, err)
	}
	if _, err := c.DB.Exec(c, emitSQL, name, qualify(c.Table), key, rawArg(raw), prev); err != nil {
		// Usually the transaction is aborted (a refused emit) or the
		// connection closed (a cancelled one), and this fails too. But a
		// statement never sent (the context was already done) leaves the
		// transaction open as service_role: set the caller's role back, so
		// a handler that ignores the error cannot go on bypassing RLS.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(c), restoreTimeout)
		_, _ = c.DB.Exec(rctx, `select set_config('role', $1, true)`, prev)
		cancel()
		return fmt.Errorf("events: emit %q: %w", name, err)
	}
	return nil
}

// restoreTimeout bounds setting the caller's role back after a failed emit.
const restoreTimeout = 2 * time.Second

const (
	// switchRoleSQL returns the caller's role and makes the transaction
	// service_role; the fenced subquery (offset 0) reads the role before
	// the outer target list switches it.
	switchRoleSQL = `select c.r, set_config('role', 'service_role', true) from (select current_setting('role') as r offset 0) c`
	// emitSQL emits and restores the caller's role ($5) in one statement.
	emitSQL = `select tablegate.emit_event($1, $2, $3, $4::jsonb), set_config('role', $5, true)`
)

// rawArg sends JSON as text (nil as SQL NULL).
func rawArg(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func keyText(k any) string {
	switch v := k.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case json.Number:
		return v.String()
	}
	return fmt.Sprint(k)
}

// qualify returns schema.table, "public" when the name has no schema;
// tablegate.emit_event quotes it as Postgres prints regclass names.
func qualify(table string) string {
	if strings.IndexByte(table, '.') >= 0 {
		return table
	}
	return "public." + table
}

package db

import (
	"context"
	"time"
)

// RunOpts are the options of one [DB.Run]. The zero value runs each
// statement on its own on the primary (see [DB.Run]) under the statement
// timeout of [Config]: right for a read, and for a write of one statement.
// RunOpts is a small value; keep a prepared one ([RunOpts.Prepare]) per
// resource or operation and copy it to set Tx or ReadOnly per call.
type RunOpts struct {
	// Tx runs fn in one transaction, so that its statements see one
	// snapshot and commit together: BEGIN and the caller settings travel
	// in the same round trip as fn's first statement, the transaction
	// commits when fn returns nil and rolls back when fn returns an error
	// or panics (the panic is re-raised after the rollback). A fn that
	// sends no statement costs no round trip at all. Without Tx, each
	// statement travels with the caller settings in one round trip and
	// commits on its own (no BEGIN or COMMIT).
	Tx bool

	// ReadOnly declares that fn writes nothing. With [Config.Replicas] the
	// work runs on a replica in rotation, one that has replayed past the
	// context's position ([WithPosition]) when it carries one, else on the
	// primary; a replica that fails during the work (lost connection,
	// shutdown, conflict with recovery) is taken out of rotation and fn
	// runs again on the primary, so fn must be safe to run twice. A
	// read-only transaction (Tx too) is read-only on a replica: one that
	// tries to write runs again on the primary. Without replicas it
	// changes nothing. Work that writes never sets it: it runs on the
	// primary, and there records the position of its commit
	// ([TrackPosition]).
	ReadOnly bool

	// StatementTimeout replaces Config.StatementTimeout for this call when
	// non-zero; negative sets none.
	StatementTimeout time.Duration

	// Unshared takes the call's connections outside the caller's share
	// (Config.MaxConnsPerCaller): for the server's own work on a caller's
	// behalf that other callers wait on, such as the events hub checking
	// what a subscriber may read. The caller's own requests never set it.
	Unshared bool

	arg any // the boxed timeoutText, filled by Prepare
}

// Prepare returns o rendered once, so that calls using it allocate
// nothing for the statement timeout. It is optional: unprepared options
// are rendered on every call.
func (o RunOpts) Prepare() RunOpts {
	if o.StatementTimeout != 0 {
		o.arg = boxTimeout(o.StatementTimeout)
	}
	return o
}

// Run runs fn as the caller c: every statement fn sends through q runs
// with c's database role and claims, set with set_config(..., true) in
// the same round trip as the statement (or as a transaction's first
// statement), so they live only for that transaction and row-level
// security decides what c sees. opts says how (zero value: each statement
// on its own, on the primary); see [RunOpts].
//
// The Querier must not be used after fn returns (it then only returns an
// error) nor, in a transaction, from several goroutines at once: a
// transaction is one connection, and statements on it run one after the
// other.
//
// Every statement runs under the statement timeout ([Config],
// RunOpts.StatementTimeout), and in a transaction so does every pause
// between statements, with at least one second (while fn works in Go with
// the transaction open: past it, Postgres ends the transaction and the
// next statement or the commit fails with [ErrTimeout]). The wait for a
// pooled connection is bounded by Config.AcquireTimeout ([ErrPoolBusy],
// [ErrCallerBusy]).
//
// Run returns what fn returned, or the error of the commit, with errors of
// Postgres and of the connection classified ([Classify]): errors.Is
// matches them with [ErrUniqueViolation], [ErrPermissionDenied],
// [ErrTimeout], [ErrUnavailable] and the other outcomes. A user whose role
// claim [Config.UserRoles] does not list is refused with
// [ErrRoleNotAllowed] before any statement.
func (d *DB) Run(ctx context.Context, c Caller, opts RunOpts, fn func(q Querier) error) error {
	var err error
	if opts.ReadOnly && d.replicas != nil {
		err = d.onReplica(ctx, c, &opts, fn)
	} else {
		err = d.run(ctx, c, &opts, fn)
	}
	if err == nil {
		return nil
	}
	return Classify(err)
}

// run runs fn on the primary.
func (d *DB) run(ctx context.Context, c Caller, opts *RunOpts, fn func(q Querier) error) error {
	s, err := d.settingsFor(c)
	if err != nil {
		return err
	}
	s.timeout = d.timeoutFor(opts)
	if opts.Unshared {
		s.key = callerKey{}
	}
	if !opts.Tx {
		return d.runStatements(ctx, s, fn)
	}
	l, err := d.acquire(ctx, s.key)
	if err != nil {
		return err
	}
	return d.txOn(ctx, l, s, fn)
}

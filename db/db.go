package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
)

// Database roles the API runs as.
const (
	RoleAnon          = "anon"
	RoleAuthenticated = "authenticated"
	RoleServiceRole   = "service_role"
)

// ErrRoleNotAllowed is returned by [DB.Tx] and [DB.Read] when a user token's
// role claim names a role outside [Config.UserRoles]. Such a caller is
// refused; it never runs with more than the listed roles.
var ErrRoleNotAllowed = errors.New("db: token role is not an allowed user role")

// Config configures a [DB]. The zero value is the closed default.
type Config struct {
	// UserRoles lists the database roles a user may run as through the
	// token's role claim. A token without a role claim runs as
	// authenticated. Default: ["authenticated"].
	UserRoles []string
}

// DB runs statements bound to a caller. It is safe for concurrent use.
type DB struct {
	pool      *pgxpool.Pool
	userRoles []string
}

// New returns a DB over pool. cfg may be nil.
func New(pool *pgxpool.Pool, cfg *Config) *DB {
	d := &DB{pool: pool, userRoles: []string{RoleAuthenticated}}
	if cfg != nil && len(cfg.UserRoles) > 0 {
		d.userRoles = slices.Clone(cfg.UserRoles)
	}
	return d
}

// Pool returns the underlying pool (for work that is not caller-bound,
// such as migrations and introspection).
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Querier runs statements. It has the method set of sqlc's generated DBTX
// interface, so sqlc queries run on it unchanged.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// settingsSQL sets the caller into the current transaction only.
const settingsSQL = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`

// Static claims of callers without a token.
var (
	anonClaims    = []byte(`{"role":"anon"}`)
	serviceClaims = []byte(`{"role":"service_role"}`)
)

// settings are the resolved role and claims of one caller.
type settings struct {
	role   string
	claims []byte // sent as text; pgx encodes []byte without a copy
}

// settingsFor resolves the database role and claims JSON of a caller.
func (d *DB) settingsFor(c authctx.Context) (settings, error) {
	switch c.Actor.Type {
	case authctx.ActorUser:
		role := RoleAuthenticated
		if v, ok := c.Claims["role"]; ok {
			s, ok := v.(string)
			if !ok || !slices.Contains(d.userRoles, s) {
				return settings{}, ErrRoleNotAllowed
			}
			role = s
		}
		raw := c.ClaimsJSON
		if raw == nil {
			b, err := json.Marshal(c.Claims)
			if err != nil {
				return settings{}, fmt.Errorf("db: marshal claims: %w", err)
			}
			raw = b
		}
		return settings{role: role, claims: raw}, nil
	case authctx.ActorService:
		return settings{role: RoleServiceRole, claims: serviceClaims}, nil
	default:
		return settings{role: RoleAnon, claims: anonClaims}, nil
	}
}

// Read runs fn with a Querier that sends every statement together with the
// caller settings in one pipelined round trip (one implicit transaction per
// statement, no BEGIN or COMMIT). Use it for reads of one statement; use
// [DB.Tx] when several statements must see one snapshot or when writing.
func (d *DB) Read(ctx context.Context, c authctx.Context, fn func(q Querier) error) error {
	s, err := d.settingsFor(c)
	if err != nil {
		return err
	}
	return fn(&readQuerier{pool: d.pool, s: s})
}

// readQuerier prefixes each statement with the caller settings.
type readQuerier struct {
	pool *pgxpool.Pool
	s    settings
}

func (q *readQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return execPrefixed(ctx, q.pool, nil, false, q.s, sql, args)
}

func (q *readQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return queryPrefixed(ctx, q.pool, nil, false, q.s, sql, args)
}

func (q *readQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := q.Query(ctx, sql, args...)
	return &prefixedRow{rows: rows, err: err}
}

// batchSender is a pool or a connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// prefixBatch queues [begin,] settings and the statement.
func prefixBatch(begin bool, s settings, sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	if begin {
		b.Queue("begin")
	}
	b.Queue(settingsSQL, s.role, s.claims)
	b.Queue(sql, args...)
	return b
}

// sendPrefixed sends the prefixed batch on conn (or the pool when conn is
// nil) and consumes the prefix results.
func sendPrefixed(ctx context.Context, pool *pgxpool.Pool, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgx.BatchResults, error) {
	var sender batchSender = pool
	if conn != nil {
		sender = conn
	}
	br := sender.SendBatch(ctx, prefixBatch(begin, s, sql, args))
	if begin {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

func execPrefixed(ctx context.Context, pool *pgxpool.Pool, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgconn.CommandTag, error) {
	br, err := sendPrefixed(ctx, pool, conn, begin, s, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func queryPrefixed(ctx context.Context, pool *pgxpool.Pool, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgx.Rows, error) {
	br, err := sendPrefixed(ctx, pool, conn, begin, s, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// batchRows closes the batch when the rows are closed.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.Rows.Err() == nil {
		r.err = err
	}
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// prefixedRow is the pgx.Row of a prefixed query.
type prefixedRow struct {
	rows pgx.Rows
	err  error
}

func (r *prefixedRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

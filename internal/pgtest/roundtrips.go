package pgtest

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer that counts what a connection sends: each
// plain query, each batch and each prepare is one network round trip. Set
// it as ConnConfig.Tracer of a pool, warm the statements up, Reset, then
// count. It is safe for concurrent use.
type RoundTrips struct {
	Queries, Batches, Prepares atomic.Int64
}

// Total returns queries + batches + prepares since the last Reset.
func (r *RoundTrips) Total() int64 {
	return r.Queries.Load() + r.Batches.Load() + r.Prepares.Load()
}

// Reset sets every count to zero.
func (r *RoundTrips) Reset() {
	r.Queries.Store(0)
	r.Batches.Store(0)
	r.Prepares.Store(0)
}

// TraceQueryStart implements pgx.QueryTracer.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.Queries.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.Batches.Add(1)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TracePrepareStart implements pgx.PrepareTracer.
func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.Prepares.Add(1)
	return ctx
}

// TracePrepareEnd implements pgx.PrepareTracer.
func (r *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

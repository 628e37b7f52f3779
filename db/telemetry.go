package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/tablegate/tablegate/telemetry"
)

// Instrument adds OpenTelemetry tracing to a pool config before the pool
// is created: a client span for each Postgres round trip (query, batch,
// prepare, connect) as a child of the request's span. A batch is one round
// trip and one span ("batch start"; the statements inside it get none).
// Spans never carry SQL text, parameters or connection details, only the
// operation name ("SELECT", "batch"); a failed round trip's span records
// the failure and its SQLSTATE (pgx.sql_state), not the error's message,
// which may quote a refused value or name the database, user and host. The duration of a round trip is its
// span's: pgx's per-operation duration histogram is not recorded (it would
// cost every query a histogram measurement the spans already carry); pool
// metrics come from [RecordPoolStats]. A tracer already set on
// cfg.ConnConfig.Tracer keeps running beside it. A nil t, or a t without a
// tracer provider, leaves cfg unchanged.
func Instrument(cfg *pgxpool.Config, t *telemetry.Telemetry) {
	tp := t.TracerProvider()
	if tp == nil {
		return
	}
	opts := []otelpgx.Option{
		otelpgx.WithDisableSQLStatementInAttributes(),
		otelpgx.WithDisableConnectionDetailsInAttributes(),
		// Pool acquire waits are reported as metrics (RecordPoolStats); a
		// span per acquire would double the spans of a read.
		otelpgx.WithDisableAcquireTracer(),
	}
	opts = append(opts, otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(noopMeterProvider()))
	var tr pgx.QueryTracer = roundTripTracer{otelpgx.NewTracer(opts...)}
	if prev := cfg.ConnConfig.Tracer; prev != nil {
		tr = multitracer.New(prev, tr)
	}
	cfg.ConnConfig.Tracer = tr
}

// RecordPoolStats reports the pool's statistics as metrics through t's
// meter provider: connections in use, idle and total, acquire count and
// cumulative acquire wait, empty acquires (a caller had to wait). The
// series carry db.client.connection.pool.name "tablegate" (otelpgx's
// default would be the pool's host, port and database). A nil t, or one
// without a meter provider, records nothing.
func RecordPoolStats(pool *pgxpool.Pool, t *telemetry.Telemetry) error {
	mp := t.MeterProvider()
	if mp == nil {
		return nil
	}
	if err := otelpgx.RecordStats(pool, otelpgx.WithStatsMeterProvider(mp),
		otelpgx.WithStatsAttributes(attribute.String("db.client.connection.pool.name", PoolName))); err != nil {
		return fmt.Errorf("db: pool metrics: %w", err)
	}
	return nil
}

// PoolName is the db.client.connection.pool.name of the pool metrics
// [RecordPoolStats] reports.
const PoolName = "tablegate"

// roundTripTracer is otelpgx's tracer with one span per round trip: the
// statements of a batch, sent together, get no span of their own (their
// errors still end the batch's span as failed).
type roundTripTracer struct{ *otelpgx.Tracer }

// TraceBatchQuery implements pgx.BatchTracer.
func (roundTripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// The end hooks hand otelpgx the error with its text withheld: otelpgx
// records err.Error() as the span's status and exception message.

// TraceQueryEnd implements pgx.QueryTracer.
func (t roundTripTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	d.Err = spanError(d.Err)
	t.Tracer.TraceQueryEnd(ctx, c, d)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t roundTripTracer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchEndData) {
	d.Err = spanError(d.Err)
	t.Tracer.TraceBatchEnd(ctx, c, d)
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (t roundTripTracer) TraceCopyFromEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceCopyFromEndData) {
	d.Err = spanError(d.Err)
	t.Tracer.TraceCopyFromEnd(ctx, c, d)
}

// TracePrepareEnd implements pgx.PrepareTracer.
func (t roundTripTracer) TracePrepareEnd(ctx context.Context, c *pgx.Conn, d pgx.TracePrepareEndData) {
	d.Err = spanError(d.Err)
	t.Tracer.TracePrepareEnd(ctx, c, d)
}

// TraceConnectEnd implements pgx.ConnectTracer.
func (t roundTripTracer) TraceConnectEnd(ctx context.Context, d pgx.TraceConnectEndData) {
	d.Err = spanError(d.Err)
	t.Tracer.TraceConnectEnd(ctx, d)
}

// errWithheld stands in a span for an error whose text may name the
// database, its user or its host.
var errWithheld = errors.New("database error (details withheld)")

// spanError returns err as a span may show it: a Postgres error keeps its
// severity and SQLSTATE, a cancellation stays one, anything else is
// errWithheld. No rows (not a failure for otelpgx) is kept as it is.
func spanError(err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return &pgconn.PgError{Severity: pgErr.Severity, SeverityUnlocalized: pgErr.SeverityUnlocalized,
			Code: pgErr.Code, Message: "statement failed"}
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return errWithheld
}

func noopMeterProvider() metric.MeterProvider { return metricnoop.NewMeterProvider() }

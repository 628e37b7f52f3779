package db

import (
	"context"
	"fmt"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/tablegate/tablegate/telemetry"
)

// Instrument adds OpenTelemetry tracing to a pool config before the pool
// is created: a client span for each Postgres round trip (query, batch,
// prepare, connect) as a child of the request's span. A batch is one round
// trip and one span ("batch start"; the statements inside it get none).
// Spans never carry SQL text, parameters or connection details, only the
// operation name ("SELECT", "batch"). The duration of a round trip is its
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
// cumulative acquire wait, empty acquires (a caller had to wait). A nil t,
// or one without a meter provider, records nothing.
func RecordPoolStats(pool *pgxpool.Pool, t *telemetry.Telemetry) error {
	mp := t.MeterProvider()
	if mp == nil {
		return nil
	}
	if err := otelpgx.RecordStats(pool, otelpgx.WithStatsMeterProvider(mp)); err != nil {
		return fmt.Errorf("db: pool metrics: %w", err)
	}
	return nil
}

// roundTripTracer is otelpgx's tracer with one span per round trip: the
// statements of a batch, sent together, get no span of their own (their
// errors still end the batch's span as failed).
type roundTripTracer struct{ *otelpgx.Tracer }

// TraceBatchQuery implements pgx.BatchTracer.
func (roundTripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func noopMeterProvider() metric.MeterProvider { return metricnoop.NewMeterProvider() }

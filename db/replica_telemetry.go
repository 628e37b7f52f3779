package db

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tablegate/tablegate/telemetry"
)

// TargetAttr is the span attribute naming where a replica-capable read
// ran: "primary" or a replica's name ("replica0").
const TargetAttr = "tablegate.db.target"

// noteTarget sets the target of a read on the request's span (nothing
// when the span does not record).
func noteTarget(ctx context.Context, target string) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(attribute.String(TargetAttr, target))
	}
}

// RecordReplicaStats reports read routing through t's meter provider:
// tablegate.db.reads (counter of replica-capable reads, by
// tablegate.db.target "primary" or "replica" with tablegate.db.replica
// naming it, and the primary's tablegate.db.route.reason),
// tablegate.db.replica.lag (seconds, by replica) and
// tablegate.db.replica.in_rotation (1 or 0, by replica). A DB without
// replicas, a nil t or one without a meter provider records nothing.
func RecordReplicaStats(d *DB, t *telemetry.Telemetry) error {
	mp := t.MeterProvider()
	if mp == nil || d == nil || d.replicas == nil {
		return nil
	}
	m := mp.Meter("github.com/tablegate/tablegate/db")
	reads, err := m.Int64ObservableCounter("tablegate.db.reads",
		metric.WithDescription("Reads that may run on a read replica, by where they ran."), metric.WithUnit("{read}"))
	if err != nil {
		return fmt.Errorf("db: replica metrics: %w", err)
	}
	lag, err := m.Float64ObservableGauge("tablegate.db.replica.lag",
		metric.WithDescription("Replay lag of each read replica as last measured."), metric.WithUnit("s"))
	if err != nil {
		return fmt.Errorf("db: replica metrics: %w", err)
	}
	in, err := m.Int64ObservableGauge("tablegate.db.replica.in_rotation",
		metric.WithDescription("1 when reads are routed to the replica, else 0."))
	if err != nil {
		return fmt.Errorf("db: replica metrics: %w", err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := d.ReplicaStats()
		for reason, n := range st.PrimaryReads {
			o.ObserveInt64(reads, int64(n), metric.WithAttributes(attribute.String(TargetAttr, TargetPrimary),
				attribute.String("tablegate.db.route.reason", reason)))
		}
		for _, r := range st.Replicas {
			name := attribute.String("tablegate.db.replica", r.Name)
			o.ObserveInt64(reads, int64(r.Reads), metric.WithAttributes(attribute.String(TargetAttr, TargetReplica), name))
			o.ObserveFloat64(lag, r.Lag.Seconds(), metric.WithAttributes(name))
			v := int64(0)
			if r.InRotation {
				v = 1
			}
			o.ObserveInt64(in, v, metric.WithAttributes(name))
		}
		return nil
	}, reads, lag, in)
	if err != nil {
		return fmt.Errorf("db: replica metrics: %w", err)
	}
	return nil
}

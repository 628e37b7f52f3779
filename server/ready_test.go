package server

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// /readyz is red, within its bound, once Postgres is stopped (a throwaway
// cluster of its own, stopped for real), and green before.
func TestReadyzRedWhenPostgresStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, stop := pgtest.Cluster(t)
	pool, err := connectPool(ctx, url, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h := readyHandler(pool, nil)
	probe := func() (int, time.Duration) {
		start := time.Now()
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code, time.Since(start)
	}
	if code, _ := probe(); code != 200 {
		t.Fatalf("/readyz with Postgres up: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if code, took := probe(); code != 503 || took > 3*time.Second {
		t.Fatalf("/readyz with Postgres stopped: %d after %v, want 503 within 3s", code, took)
	}
}

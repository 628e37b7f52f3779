// Package integration holds end-to-end tests that need heavier tools than
// the library itself: testcontainers (a Postgres in Docker when no other
// server answers), OpenAPI validators, node interop. It is its own module so
// none of that reaches the go.mod of applications that import tablegate.
package integration

import (
	"context"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Fallback = dockerPostgres
	pgtest.Main(m)
}

// dockerPostgres starts Postgres in a container when a Docker engine
// answers (a docker client alone is not an engine).
func dockerPostgres(ctx context.Context) (string, func() error, error) {
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", nil, err
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return "", nil, err
	}
	c, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("app"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", nil, err
	}
	u, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = c.Terminate(context.Background())
		return "", nil, err
	}
	return u, func() error { return c.Terminate(context.Background()) }, nil
}

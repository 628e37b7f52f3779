// Package itest holds what the integration test packages share: a TestMain
// that finds Postgres (falling back to a container when a Docker engine
// answers), and the tablegate binary built from this checkout.
package itest

import (
	"context"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// Main is the TestMain of an integration package that uses Postgres:
// pgtest's server resolution with a Postgres container as the last
// fallback.
func Main(m *testing.M) {
	pgtest.Fallback = DockerPostgres
	pgtest.Main(m)
}

// DockerPostgres starts Postgres in a container when a Docker engine
// answers (a docker client alone is not an engine).
func DockerPostgres(ctx context.Context) (string, func() error, error) {
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

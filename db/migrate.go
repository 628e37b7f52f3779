package db

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tablegate/tablegate/sql/migrations"
)

// MigrationTable is the goose version table of tablegate's migrations. It
// is distinct from goose's default so that an application's own goose
// migrations can live in the same database.
const MigrationTable = "tablegate_migrations"

// NewMigrator returns a goose Provider over the embedded migrations for
// pool (version table [MigrationTable]), holding a session advisory lock
// while it migrates so that several processes can call it at once. Close
// the Provider when done: that closes its database/sql handle over pool,
// not pool itself.
func NewMigrator(pool *pgxpool.Pool) (*goose.Provider, error) {
	sqlDB := stdlib.OpenDBFromPool(pool)
	p, err := newProvider(sqlDB)
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return p, nil
}

func newProvider(sqlDB *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("db: migration lock: %w", err)
	}
	all := append([]goose.ProviderOption{
		goose.WithSessionLocker(locker),
		goose.WithTableName(MigrationTable),
	}, opts...)
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, all...)
	if err != nil {
		return nil, fmt.Errorf("db: migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending embedded migration to the database of pool.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	p, err := NewMigrator(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("db: migrate up: %w", err)
	}
	return nil
}

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
// pool, holding a session advisory lock while it migrates so that several
// processes can call it at once. Close the returned closer when done.
func NewMigrator(pool *pgxpool.Pool, opts ...goose.ProviderOption) (*goose.Provider, func() error, error) {
	sqlDB := stdlib.OpenDBFromPool(pool)
	p, err := newProvider(sqlDB, opts...)
	if err != nil {
		_ = sqlDB.Close()
		return nil, nil, err
	}
	return p, sqlDB.Close, nil
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
	p, closeDB, err := NewMigrator(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("db: migrate up: %w", err)
	}
	return nil
}

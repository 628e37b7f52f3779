package db_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// A missing database, a missing role and a server that does not answer
// are told apart, each with its fix, and no password is quoted.
func TestExplainConnectError(t *testing.T) {
	t.Parallel()
	good, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	host, port := good.ConnConfig.Host, good.ConnConfig.Port
	url := func(user, database string) string {
		return "postgres://" + user + ":hunter2@" + host + ":" + itoa(port) + "/" + database + "?connect_timeout=3"
	}
	for name, c := range map[string]struct {
		url   string
		cause db.ConnectCause
		want  []string
	}{
		"no database": {url("postgres", "no_such_db"), db.CauseNoDatabase,
			[]string{`database "no_such_db" does not exist`, "createdb no_such_db"}},
		"no role": {url("no_such_role", "postgres"), db.CauseNoRole,
			[]string{`role "no_such_role" does not exist`, "fix the user in the URL"}},
		"unreachable": {"postgres://postgres:hunter2@127.0.0.1:1/postgres?connect_timeout=3", db.CauseUnreachable,
			[]string{"no Postgres server answers at 127.0.0.1:1", "start it"}},
	} {
		cfg, err := pgxpool.ParseConfig(c.url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = pool.Ping(ctx)
			pool.Close()
		}
		cancel()
		got := db.ExplainConnectError(err, &cfg.ConnConfig.Config)
		var ce *db.ConnectError
		if !errors.As(got, &ce) || ce.Cause != c.cause {
			t.Errorf("%s: %v (cause %v), want %s", name, got, ce, c.cause)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%s: %q lacks %q", name, got, w)
			}
		}
		if strings.Contains(got.Error(), "hunter2") || strings.Contains(got.Error(), "\n") {
			t.Errorf("%s: %q", name, got)
		}
		if !errors.Is(got, err) {
			t.Errorf("%s: the driver's error is not wrapped", name)
		}
	}
	if db.ExplainConnectError(nil, nil) != nil {
		t.Error("nil error")
	}
}

func itoa(n uint16) string { return strconv.Itoa(int(n)) }

package db_test

import (
	"context"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestSmoke(t *testing.T) {
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	var uid, role string
	c := authctx.AuthContext(authctx.NewUser(authctx.Claims{"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated"}, "t", nil))
	err := d.Read(context.Background(), c, func(q db.Querier) error {
		return q.QueryRow(context.Background(), "select auth.uid()::text, current_user").Scan(&uid, &role)
	})
	if err != nil || uid != "11111111-1111-4111-8111-111111111111" || role != "authenticated" {
		t.Fatal(err, uid, role)
	}
}

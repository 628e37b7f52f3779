package db_test

import (
	"context"
	"encoding/json"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

func asProblem(err error) (int, bool) {
	p, ok := problem.As(err)
	if !ok {
		return 0, false
	}
	return p.Status, true
}

// claims are JWT claims as a test writes them.
type claims = map[string]any

// user is the Caller of a signed-in user with claims (sub is the id).
func user(c claims) db.Caller {
	raw, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	id, _ := c["sub"].(string)
	return db.UserCaller(id, raw)
}

// txOpts returns o for a transaction.
func txOpts(o db.RunOpts) db.RunOpts { o.Tx = true; return o }

// read and tx are d.Run without options and in a transaction, as
// functions of the caller.
func read(d *db.DB) func(context.Context, db.Caller, func(db.Querier) error) error {
	return func(ctx context.Context, c db.Caller, fn func(db.Querier) error) error {
		return d.Run(ctx, c, db.RunOpts{}, fn)
	}
}

func inTx(d *db.DB) func(context.Context, db.Caller, func(db.Querier) error) error {
	return func(ctx context.Context, c db.Caller, fn func(db.Querier) error) error {
		return d.Run(ctx, c, db.RunOpts{Tx: true}, fn)
	}
}

package rest_test

import (
	"fmt"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Waiting for a pooled connection is bounded (Config.AcquireTimeout); a
// request that got none answers 503 with Retry-After, like a statement
// cancelled by its time budget.
func ExampleDBProblem_poolBusy() {
	p, _ := problem.As(rest.DBProblem(db.ErrPoolBusy))
	fmt.Println(p.Status, p.Kind, p.Header.Get("Retry-After"))
	// Output: 503 unavailable 1
}

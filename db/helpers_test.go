package db_test

import "github.com/tablegate/tablegate/problem"

func asProblem(err error) (int, bool) {
	p, ok := problem.As(err)
	if !ok {
		return 0, false
	}
	return p.Status, true
}

package rest

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentRequests: one resource serves many callers at once (run
// with -race); each caller sees exactly its own rows.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{Hooks: Hooks{AfterCreateFunc: func(c *Ctx, r Row) (any, error) { return r, nil }}})
	s := server(t, "todos", res)
	users := []string{alice, bob, "33333333-3333-3333-3333-333333333333", "44444444-4444-4444-4444-444444444444"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, u := range users {
		wg.Add(1)
		go func(u string) {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				r := do(t, s, "POST", "/api/todos", u, fmt.Sprintf(`{"title":"%s-%d"}`, u[:4], i))
				if r.status != 201 {
					errs <- fmt.Errorf("create: %s", r)
					return
				}
				id := decode(t, r.body)["id"].(string)
				if r := do(t, s, "GET", "/api/todos/"+id, u, ""); r.status != 200 {
					errs <- fmt.Errorf("get: %s", r)
					return
				}
			}
			p := getPage(t, s, "/api/todos?limit=100", u)
			if len(p.Items) != 15 {
				errs <- fmt.Errorf("%s sees %d rows", u, len(p.Items))
			}
			for _, it := range p.Items {
				if it["owner_id"] != u {
					errs <- fmt.Errorf("%s sees a row of %v", u, it["owner_id"])
				}
			}
		}(u)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

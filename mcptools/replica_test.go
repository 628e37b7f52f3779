package mcptools_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/internal/replicatest"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/rest"
)

// TestToolsReadTheirWritesBehindAReplica: behind a replica that replays
// 500 ms late, a get and a list tool call right after a create tool call
// see the created row: tool calls carry the server's last written
// position, so they run on the primary until the replica has it, and on
// the replica once it has.
func TestToolsReadTheirWritesBehindAReplica(t *testing.T) {
	rep := pgtest.StartReplicated(t)
	primary := pgtest.Pool(t, rep.PrimaryURL)
	if _, err := primary.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	d := db.New(primary, &db.Config{Replicas: []*pgxpool.Pool{pgtest.Pool(t, rep.ReplicaURL)},
		ReplicaPoll: 10 * time.Millisecond, ReplicaWait: 2 * time.Millisecond})
	t.Cleanup(d.Close)
	for deadline := time.Now().Add(30 * time.Second); !d.ReplicaStats().Replicas[0].InRotation; {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not enter the rotation")
		}
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	if err := rep.Replica.SetApplyDelay(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	o := todoOptions()
	o.Caller = restCaller
	todos, err := rest.NewResource(context.Background(), d, "todos", o)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{todos}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, pool: primary, db: d, todos: todos, srv: srv}
	cs := b.session(user(alice))
	for i := 0; i < 20; i++ {
		id := ok(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "mcp"}}))["id"]
		if got := ok(t, call(t, cs, "getTodo", map[string]any{"id": id})); got["id"] != id {
			t.Fatalf("get right after create: %v", got)
		}
		items, _ := ok(t, call(t, cs, "listTodos", map[string]any{"filters": map[string]any{"id": "eq." + id.(string)}}))["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("list right after create: %v", items)
		}
	}
	r0 := d.ReplicaStats().Replicas[0].Reads
	if err := replicatest.WaitReplayed(context.Background(), d, primary, 0); err != nil {
		t.Fatal(err)
	}
	ok(t, call(t, cs, "listTodos", map[string]any{}))
	if d.ReplicaStats().Replicas[0].Reads != r0+1 {
		t.Fatalf("a list after the replica caught up did not run on it: %+v", d.ReplicaStats())
	}
}

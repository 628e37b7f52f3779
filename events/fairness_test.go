package events_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
)

// countStream opens url with Last-Event-ID last and reads it until want
// events arrived (or ctx ends), returning the ids received in order.
func countStream(ctx context.Context, url, tok string, last int64, want int) ([]int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	var ids []int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for len(ids) < want && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: tablegate.gap") {
			return ids, fmt.Errorf("unexpected gap event after %d events", len(ids))
		}
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil {
				return ids, err
			}
			ids = append(ids, n)
		}
	}
	if len(ids) < want {
		return ids, fmt.Errorf("stream ended after %d of %d events: %v", len(ids), want, sc.Err())
	}
	return ids, nil
}

// TestReplayFloodKeepsToTheCallersShare reproduces one user reconnecting 32
// streams with Last-Event-ID: 0 over more than 10 000 retained events
// while a user of another tenant lists: the replays read and check the
// outbox on the replaying user's share of the pool (MaxConnsPerCaller),
// so the connections in use never exceed that share plus what the other
// tenant and the hub's own loops hold, every list of the other tenant
// answers 200 within the acquire timeout, and every stream still receives
// every event exactly once. Before, each replay read and checked outside
// any share and 32 replays held the whole pool.
func TestReplayFloodKeepsToTheCallersShare(t *testing.T) {
	const (
		poolConns  = 12
		perCaller  = 3
		streams    = 32
		nEvents    = 10500
		acquireFor = 2 * time.Second
	)
	b := setup(t, &fixtureOpts{conns: poolConns,
		db:  &db.Config{MaxConnsPerCaller: perCaller, AcquireTimeout: acquireFor},
		hub: &events.Config{PollInterval: 200 * time.Millisecond, Heartbeat: time.Second, MaxReplay: 20000}})
	if _, err := b.pool.Exec(t.Context(), `insert into public.todos (tenant_id, owner_id, title)
select '`+tenantA+`', '`+alice+`', 'replayed ' || g from generate_series(1, `+strconv.Itoa(nEvents)+`) g;
insert into public.todos (tenant_id, owner_id, title)
select '`+tenantB+`', '`+carol+`', 'carol ' || g from generate_series(1, 50) g`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); b.hub.Stats().Head < nEvents+50; time.Sleep(50 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatalf("the hub read %d of %d events", b.hub.Stats().Head, nEvents+50)
		}
	}
	dbg, err := pgx.Connect(t.Context(), b.url)
	if err != nil {
		t.Fatal(err)
	}
	defer dbg.Close(context.Background())
	// Connections in use, sampled while the replays run.
	var maxInUse atomic.Int32
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := b.pool.Stat().AcquiredConns(); n > maxInUse.Load() {
				maxInUse.Store(n)
				if n >= 6 && os.Getenv("DEBUGCONNS") != "" {
					rows, _ := dbg.Query(context.Background(), `select state, left(regexp_replace(query, '\s+', ' ', 'g'), 90) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`)
					for rows.Next() {
						var st, q string
						_ = rows.Scan(&st, &q)
						t.Logf("%d: %s %s", n, st, q)
					}
					rows.Close()
				}
			}
			time.Sleep(200 * time.Microsecond) // sleep: the writer paces its statements on purpose
		}
	}()
	// The other tenant lists, one request after another.
	carolTok := b.token(carol, tenantB, false)
	var lists, slowLists, failedLists atomic.Int32
	var slowest atomic.Int64
	listDone := make(chan struct{})
	go func() {
		defer close(listDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			req, _ := http.NewRequest("GET", b.srv.URL+"/api/todos/?limit=20", nil)
			req.Header.Set("Authorization", "Bearer "+carolTok)
			resp, err := http.DefaultClient.Do(req)
			el := time.Since(start)
			lists.Add(1)
			if el.Nanoseconds() > slowest.Load() {
				slowest.Store(el.Nanoseconds())
			}
			if err != nil {
				failedLists.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failedLists.Add(1)
			}
			if el >= acquireFor {
				slowLists.Add(1)
			}
		}
	}()
	aliceTok := b.token(alice, tenantA, false)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := countStream(ctx, b.srv.URL+"/api/todos/events", aliceTok, 0, nEvents)
			if err != nil {
				errs <- fmt.Errorf("stream %d: %w", i, err)
				return
			}
			for j := 1; j < len(ids); j++ {
				if ids[j] <= ids[j-1] {
					errs <- fmt.Errorf("stream %d: id %d after %d", i, ids[j], ids[j-1])
					return
				}
			}
		}()
	}
	wg.Wait()
	replay := time.Since(start)
	close(stop)
	sampler.Wait()
	<-listDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d streams replayed %d events each in %v; connections in use at most %d of %d; %d lists, slowest %v",
		streams, nEvents, replay, maxInUse.Load(), poolConns, lists.Load(), time.Duration(slowest.Load()))
	// The replaying caller's share, plus one for the other tenant's list,
	// one for the hub's delivery loop and one for its pruning loop.
	if bound := int32(perCaller + 3); maxInUse.Load() > bound {
		t.Errorf("%d connections in use at once; the replaying caller may hold %d, everybody else needs at most 3",
			maxInUse.Load(), perCaller)
	}
	if failedLists.Load() > 0 || slowLists.Load() > 0 {
		t.Errorf("the other tenant's lists: %d of %d failed, %d waited %v or more", failedLists.Load(), lists.Load(), slowLists.Load(), acquireFor)
	}
	if lists.Load() == 0 {
		t.Error("the other tenant listed nothing during the replays")
	}
}

// TestReplayLimitAnswersAGap: a resume further behind than MaxReplay gets
// a tablegate.gap event naming the skipped range, then exactly the last
// MaxReplay events, not the whole outbox.
func TestReplayLimitAnswersAGap(t *testing.T) {
	t.Parallel()
	b := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 100 * time.Millisecond, Heartbeat: time.Second, MaxReplay: 300, Batch: 64}})
	if _, err := b.pool.Exec(t.Context(), `insert into public.todos (tenant_id, owner_id, title)
select '`+tenantA+`', '`+alice+`', 't' || g from generate_series(1, 1000) g`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); b.hub.Stats().Head < 1000; time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatal("the hub did not read the events")
		}
	}
	c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false), "Last-Event-ID", "0")
	ev, err := c.next(10 * time.Second)
	if err != nil || ev.Name != "tablegate.gap" {
		t.Fatalf("first message %v %q %s, want tablegate.gap", err, ev.Name, ev.Raw)
	}
	if want := `{"last_event_id":0,"pruned_through":700,"reason":"replay_limit"}`; ev.Raw != want {
		t.Fatalf("gap %s, want %s", ev.Raw, want)
	}
	var ids []int64
	for len(ids) < 300 {
		ev, err := c.next(10 * time.Second)
		if err != nil {
			t.Fatalf("after %d events: %v", len(ids), err)
		}
		ids = append(ids, ev.Data.ID)
	}
	if !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) || ids[0] != 701 || ids[299] != 1000 {
		t.Fatalf("replayed %d..%d, want 701..1000 in order", ids[0], ids[len(ids)-1])
	}
	c.quiet(300 * time.Millisecond)
}

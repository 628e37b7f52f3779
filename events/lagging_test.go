package events_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/events"
)

// TestResumeOnALaggingInstanceNeverRepeats: clients alternate between two
// instances on one database with Last-Event-ID while one instance runs
// seconds behind (its listening connection cannot connect, so it reads the
// outbox only when its backoff ends). Over 5 000 events every client
// receives each event exactly once: an instance behind the client's
// position skips what the client has, one ahead replays strictly after
// it. Before, the lagging instance counted from its own head and resent
// up to the client's position.
func TestResumeOnALaggingInstanceNeverRepeats(t *testing.T) {
	t.Parallel()
	const nEvents, clients = 5000, 4
	a := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 100 * time.Millisecond, Heartbeat: time.Second}})
	// A port nothing listens on: the second instance's LISTEN fails and it
	// polls only between its backoff's waits (up to 5 s).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().(*net.TCPAddr).Port
	l.Close()
	lc, err := pgx.ParseConfig(a.url)
	if err != nil {
		t.Fatal(err)
	}
	lc.Port = uint16(dead)
	lc.ConnectTimeout = time.Second
	b := setup(t, &fixtureOpts{url: a.url, key: a.key, hub: &events.Config{PollInterval: 100 * time.Millisecond,
		Heartbeat: time.Second, ListenConfig: lc, Logger: discardLogger()}})
	tok := a.token(alice, tenantA, false)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; i < nEvents; i += 25 {
			if _, err := a.pool.Exec(context.Background(), `insert into public.todos (tenant_id, owner_id, title)
select '`+tenantA+`', '`+alice+`', 'lag ' || g from generate_series(1, 25) g`); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(25 * time.Millisecond) // sleep: the writer paces its batches on purpose
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	results := make([][]int64, clients)
	switches := make([]int, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []int64
			last := int64(0)
			for i := 0; ctx.Err() == nil && last < nEvents; i++ {
				srv := a.srv.URL
				if (i+c)%2 == 1 {
					srv = b.srv.URL
				}
				got = readFor(ctx, srv+"/api/todos/events", tok, last,
					time.Duration(50+rand.IntN(250))*time.Millisecond, got)
				if len(got) > 0 {
					last = got[len(got)-1]
				}
				switches[c]++
			}
			results[c] = got
		}()
	}
	wg.Wait()
	<-writerDone
	var want []int64
	rows, _ := a.pool.Query(t.Context(), `select seq from tablegate.events order by seq`)
	want, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(want) != nEvents {
		t.Fatalf("outbox: %d events, %v", len(want), err)
	}
	for c, got := range results {
		seen := map[int64]int{}
		dups := 0
		for _, id := range got {
			if seen[id]++; seen[id] > 1 {
				dups++
			}
		}
		lost := 0
		var lostIDs []int64
		for _, id := range want {
			if seen[id] == 0 {
				lost++
				if len(lostIDs) < 10 {
					lostIDs = append(lostIDs, id)
				}
			}
		}
		if lost > 0 {
			t.Logf("client %d lost %v…", c, lostIDs)
		}
		t.Logf("client %d: %d connections, %d events received, %d duplicates, %d lost", c, switches[c], len(got), dups, lost)
		if dups > 0 || lost > 0 {
			t.Errorf("client %d: %d duplicates, %d lost of %d events", c, dups, lost, nEvents)
		}
		if switches[c] < 10 {
			t.Errorf("client %d switched instances only %d times", c, switches[c])
		}
	}
	if a.hub.Stats().Head < b.hub.Stats().Head {
		t.Logf("heads: %d, %d", a.hub.Stats().Head, b.hub.Stats().Head)
	}
}

// readFor reads the stream at url resuming after last for d (or until the
// stream ends), appending the ids received to got.
func readFor(ctx context.Context, url, tok string, last int64, d time.Duration, got []int64) []int64 {
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return got
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		time.Sleep(50 * time.Millisecond) // sleep: a refused reader pauses before it reconnects, as a client would
		return got
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var id int64
	hasID := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id, _ = strconv.ParseInt(line[4:], 10, 64)
			hasID = true
		case line == "" && hasID:
			// An event counts once its message is complete.
			got = append(got, id)
			hasID = false
		}
	}
	return got
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

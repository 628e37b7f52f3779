package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tablegate/tablegate/dataapi"
	"github.com/tablegate/tablegate/db"
)

// dataAPIFixture adds to the items fixture an owners table that items
// reference (the list's one to-one embed) and returns the data API, as
// serve mounts it (the resolver's middleware, then the API under
// /rest/v1).
func dataAPIFixture(tb testing.TB, fx *httpFixture) http.Handler {
	tb.Helper()
	_, err := fx.pool.Exec(context.Background(), `
		create table owners (id uuid primary key, name text not null);
		insert into owners values ('`+benchUser+`', 'bench owner');
		alter table owners enable row level security;
		create policy own on owners for select to authenticated using (id = (select auth.uid()));
		grant select on owners to authenticated;
		alter table items add foreign key (owner) references owners (id);
		analyze owners;`)
	if err != nil {
		tb.Fatal(err)
	}
	api, err := dataapi.New(context.Background(), &dataapi.Config{DB: db.New(fx.pool, nil)})
	if err != nil {
		tb.Fatal(err)
	}
	return fx.resolver.Middleware(http.StripPrefix("/rest/v1", api))
}

// dataAPIListPath is the data API's 50-row list with one to-one embed.
const dataAPIListPath = "/rest/v1/items?select=id,title,done,owners(name)&order=id&limit=50"

// BenchmarkDataAPI compares the PostgREST-compatible data API with the
// native route and the raw pgx floor in one run, alternating rounds
// (64 clients, the caller's ES256 token, memo hits):
//
//   - get: GET /rest/v1/items?id=eq.N (Accept: the single-object type)
//     against GET /items/N;
//   - list: the data API's 50 rows with one to-one embed (owners(name))
//     against the native 50-row list (no embed: it has none) and the
//     floor's.
//
// Metrics: <server>-ops/s, -p50-µs, -p99-µs; dataapi-ratio = data API /
// floor and dataapi-vs-native = data API / native route (means, and the
// medians of the per-round ratios).
func BenchmarkDataAPI(b *testing.B) {
	fx := newHTTPFixture(b, setupItems(b))
	data := dataAPIFixture(b, fx)
	servers := map[string]http.Handler{"floor": fx.floor, "native": fx.tablegate, "dataapi": data}
	urls := map[string]string{}
	for name, h := range servers {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		urls[name] = srv.URL
	}
	client := httpClient()
	b.Cleanup(client.CloseIdleConnections)
	var n atomic.Int64
	id := func() string { return strconv.FormatInt(n.Add(1)%10000+1, 10) }

	run := func(b *testing.B, paths map[string]func() string, accept string) {
		var subs []*loadSubject
		for _, name := range []string{"floor", "native", "dataapi"} {
			fn := getter(client, urls[name], fx.token, paths[name])
			if name == "dataapi" && accept != "" {
				fn = acceptGetter(client, urls[name], fx.token, accept, paths[name])
			}
			subs = append(subs, &loadSubject{name: name, fn: fn})
		}
		for b.Loop() {
			alternate(b, httpRounds, httpRound, subs)
		}
		floor, native, data := subs[0], subs[1], subs[2]
		for _, s := range subs {
			s.report(b)
		}
		b.ReportMetric(data.ops()/floor.ops(), "dataapi-ratio")
		b.ReportMetric(data.ops()/native.ops(), "dataapi-vs-native")
		b.ReportMetric(medianRatio(data, floor), "dataapi-ratio-median")
		b.ReportMetric(medianRatio(data, native), "dataapi-vs-native-median")
		b.ReportMetric(loadavg(), "load-1m")
	}
	b.Run("get", func(b *testing.B) {
		run(b, map[string]func() string{
			"floor":   func() string { return "/items/" + id() },
			"native":  func() string { return "/items/" + id() },
			"dataapi": func() string { return "/rest/v1/items?select=id,owner,title,done&id=eq." + id() },
		}, "application/vnd.pgrst.object+json")
	})
	b.Run("list", func(b *testing.B) {
		run(b, map[string]func() string{
			"floor":   func() string { return "/items/" },
			"native":  func() string { return "/items/" },
			"dataapi": func() string { return dataAPIListPath },
		}, "")
	})
}

// acceptGetter is getter with an Accept header.
func acceptGetter(c *http.Client, base, token, accept string, path func() string) func(ctx context.Context) error {
	auth := "Bearer " + token
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Accept", accept)
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return &statusError{res.StatusCode}
		}
		return nil
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.code) }

// TestDataAPIBenchShapes checks what the benchmark measures: the data
// API answers the same row as the native route for a GET by id, and the
// list's 50 rows each carry their embedded owner.
func TestDataAPIBenchShapes(t *testing.T) {
	fx := newHTTPFixture(t, setupItems(t))
	data := dataAPIFixture(t, fx)
	get := func(h http.Handler, path, accept string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+fx.token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	code, native := get(fx.tablegate, "/items/42", "")
	dcode, body := get(data, "/rest/v1/items?select=id,owner,title,done&id=eq.42", "application/vnd.pgrst.object+json")
	if code != 200 || dcode != 200 || body != native {
		t.Errorf("get: native %d %s, data API %d %s", code, native, dcode, body)
	}
	dcode, body = get(data, dataAPIListPath, "")
	if dcode != 200 || strings.Count(body, `"owners":{"name":"bench owner"}`) != 50 {
		t.Errorf("list: %d %.200s", dcode, body)
	}
}

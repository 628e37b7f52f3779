package events_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/syncbuf"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/telemetry"
)

// TestDescribedAndServedBySpec: spec.Config.Streams documents the stream
// (text/event-stream, one schema per event, the action payload schema) and
// the API handler serves it at {base}/{table}/events behind the resolver.
func TestDescribedAndServedBySpec(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	st, err := b.hub.Stream(t.Context(), b.res, &events.StreamOpts{Table: true, Resolver: b.rv,
		Payloads: map[string]*jsonschema.Schema{"todo.completed": rest.MustSchemaFor[struct {
			ID   int64 `json:"id"`
			Done bool  `json:"done"`
		}]()}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := spec.DefineAPI(&spec.Config{Info: spec.Info{Title: "t", Version: "1"}, BasePath: "/api",
		Resources: map[string]*rest.Resource{"todos": b.res}, Streams: map[string]spec.EventStream{"todos": st},
		Guard: authctx.Guard})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]map[string]any
		Components struct{ Schemas map[string]map[string]any }
	}
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/todos/events"]["get"]
	raw, _ := json.Marshal(op)
	for _, want := range []string{`"text/event-stream"`, `"streamTodoEvents"`, `"Last-Event-ID"`, `"todos.deleted"`, `"todo.announced"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("events operation lacks %s: %s", want, raw)
		}
	}
	ev, _ := json.Marshal(doc.Components.Schemas["TodoEvent_todo.completed"])
	if !strings.Contains(string(ev), `"done"`) || !strings.Contains(string(ev), `"const":"todo.completed"`) {
		t.Errorf("payload schema of todo.completed: %s", ev)
	}
	row, _ := json.Marshal(doc.Components.Schemas["TodoEvent_todos.created"])
	if !strings.Contains(string(row), `"#/components/schemas/Todo"`) {
		t.Errorf("payload schema of todos.created: %s", row)
	}
	if cop, _ := json.Marshal(doc.Paths["/todos/{id}/complete"]["post"]["x-service-emits"]); string(cop) != `["todo.completed"]` {
		t.Errorf("x-service-emits: %s", cop)
	}
	// Served: a Bearer caller gets the stream, no session gets 401.
	var logs syncbuf.Buffer
	tel, err := telemetry.New(&telemetry.Config{AccessLog: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	outer := http.NewServeMux()
	outer.Handle("/api/", b.rv.Middleware(b.rv.CrossSite(api.Handler())))
	srv := httptest.NewServer(tel.Handler(outer))
	t.Cleanup(srv.Close)
	if c := subscribeTo(t, srv.URL+"/api/todos/events"); c.status != 401 {
		t.Fatalf("no session: %d %s", c.status, c.body)
	}
	// Reported under the stream's own route, not the API's mount point.
	if resp, err := http.Get(srv.URL + "/api/openapi.json"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		l := logs.String()
		if strings.Contains(l, `"route":"/api/todos/events","status":401`) && strings.Contains(l, `"route":"/api/openapi.json"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("access log routes of the stream and the document:\n%s", l)
		}
	}
	c := subscribeTo(t, srv.URL+"/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false))
	if c.status != 200 {
		t.Fatalf("bearer: %d %s", c.status, c.body)
	}
	b.create(b.token(bob, tenantA, false), "described")
	c.expect("todos.created")
	// The item route still answers for other keys.
	resp, err := http.Get(srv.URL + "/api/todos/1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatalf("anon read a row")
	}
	// A request the guard refuses is reported under its resource's mount,
	// not as "other" (it never reaches the resource, which reports the
	// precise route).
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), `"route":"/api/todos/{path...}","status":401`); time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatalf("access log of a refused item request:\n%s", logs.String())
		}
	}
}

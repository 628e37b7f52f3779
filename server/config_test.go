package server

import (
	"strings"
	"testing"
	"time"
)

// TestEventsConfig: the "events" section's keys, and clear errors for a
// retention too short to resume, a negative replay bound, a section no
// table uses and a misspelt key.
func TestEventsConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"events": {"retention": "24h", "max_replay": 500}, "tables": {"todos": {"events": true}}}`), "tablegate.json")
	if err != nil {
		t.Fatal(err)
	}
	if hc := c.Events.hubConfig(nil); hc.Retention != 24*time.Hour || hc.MaxReplay != 500 {
		t.Errorf("hub config %v / %d, want 24h / 500", hc.Retention, hc.MaxReplay)
	}
	if hc := (*EventsConfig)(nil).hubConfig(nil); hc.Retention != 0 || hc.MaxReplay != 0 {
		t.Errorf("no section: %v / %d, want the hub's defaults", hc.Retention, hc.MaxReplay)
	}
	for cfg, want := range map[string]string{
		`{"events": {"retention": "10s"}, "tables": {"todos": {"events": true}}}`:  "events.retention: 10s is below 1m0s",
		`{"events": {"retention": "soon"}, "tables": {"todos": {"events": true}}}`: "not a duration",
		`{"events": {"retention": "-1h"}, "tables": {"todos": {"events": true}}}`:  "must not be negative",
		`{"events": {"max_replay": -1}, "tables": {"todos": {"events": true}}}`:    "events.max_replay: -1 is negative",
		`{"events": {"retention": "2h"}, "tables": {"todos": {}}}`:                 `add "events": true to a table`,
		`{"events": {"retension": "2h"}, "tables": {"todos": {"events": true}}}`:   `unknown key "retension" in events (did you mean "retention"?)`,
	} {
		if _, err := ParseConfig([]byte(cfg), "tablegate.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", cfg, err, want)
		}
	}
}

// TestServeDataAPIConfig: bad "data_api" objects are refused with the
// field to fix, before connecting.
func TestServeDataAPIConfig(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, msg string }{
		"relative path": {`{"tables":{"t":{}},"data_api":{"path":"rest"}}`, "data_api.path must be a path"},
		"on base path":  {`{"tables":{"t":{}},"data_api":{"path":"/api"}}`, "meets the route /api"},
		"under base":    {`{"tables":{"t":{}},"data_api":{"path":"/api/rest"}}`, "meets the route /api"},
		"on a table":    {`{"base_path":"/","tables":{"rest":{}},"data_api":{}}`, "meets the route /rest"},
		"on livez":      {`{"tables":{"t":{}},"data_api":{"path":"/livez"}}`, "meets the route /livez"},
		"empty schema":  {`{"tables":{"t":{}},"data_api":{"schemas":[""]}}`, "data_api.schemas holds an empty name"},
		"max rows":      {`{"tables":{"t":{}},"data_api":{"max_rows":-1}}`, "data_api.max_rows must be positive"},
		"unknown field": {`{"tables":{"t":{}},"data_api":{"schema":["public"]}}`, `"schema"`},
	}
	for name, c := range cases {
		_, err := ParseConfig([]byte(c.body), name)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", name, err, c.msg)
		}
	}
	cfg, err := ParseConfig([]byte(`{"tables":{"t":{}},"data_api":{}}`), "defaults")
	if err != nil || cfg.DataAPI.Path != "/rest/v1" || len(cfg.DataAPI.Schemas) != 1 || cfg.DataAPI.Schemas[0] != "public" {
		t.Fatalf("defaults: %+v %v", cfg.DataAPI, err)
	}
}

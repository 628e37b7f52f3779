package main

import (
	"context"
	"fmt"

	"github.com/tablegate/tablegate/server"
)

const openapiUsage = `Usage:
  tablegate openapi --config FILE [--database-url URL] [--format json|yaml]

Prints the OpenAPI 3.1 description of the tables of a serve config: the same
document "tablegate serve" publishes at {base_path}/openapi.json. The tables
are read from the database (columns, types, keys), so it needs one:
--database-url, else DATABASE_URL, else the config's database_url.
`

func runOpenAPI(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "openapi", openapiUsage)
	configPath := fs.String("config", "", "config `file` (JSON), as for serve")
	dbFlag := fs.String("database-url", "", "Postgres `URL` (default $DATABASE_URL, else the config's database_url)")
	format := fs.String("format", "json", "output `format`: json or yaml")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *configPath == "" {
		return usagef("--config is required (the JSON file of tablegate serve)")
	}
	if *format != "json" && *format != "yaml" {
		return usagef("--format must be json or yaml, got %q", *format)
	}
	cfg, err := server.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	dbURL, err := databaseURL(e.getenv, *dbFlag, cfg.DatabaseURL)
	if err != nil {
		return err // the description reads the tables' columns
	}
	pool, err := connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	cfg.Log = e.stderr
	api, err := server.Describe(ctx, cfg, pool)
	if err != nil {
		return err
	}
	out := api.JSON()
	if *format == "yaml" {
		out = api.YAML()
	}
	_, err = fmt.Fprint(e.stdout, string(out))
	return err
}

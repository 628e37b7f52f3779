package main

import (
	"regexp"

	"github.com/tablegate/tablegate/server"
)

// serveConfig is the config file of serve, which doctor and openapi read
// too (package server owns its schema).
type serveConfig = server.Config

// loadServeConfig reads, parses and validates a config file.
func loadServeConfig(path string) (*serveConfig, error) { return server.LoadConfig(path) }

var (
	// crudOps are the operations a table may serve.
	crudOps = []string{"list", "get", "create", "update", "delete"}
	// tableName matches a [schema.]table name.
	tableName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$`)
)

package main

import (
	"regexp"
	"slices"

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

// grantRolesOf lists the database roles the callers a guard admits run
// as, whose grants serve checks at start: authenticated for users and
// anonymous sign-ins, anon for callers without a session (service_role,
// which bypasses RLS, is not checked).
func grantRolesOf(guard []string) []string {
	roles := []string{}
	for _, g := range guard {
		role := "authenticated"
		switch g {
		case "anon":
			role = "anon"
		case "service":
			continue
		}
		if !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	return roles
}

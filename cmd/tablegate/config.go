package main

import "github.com/tablegate/tablegate/server"

// serveConfig is the config file of serve, which doctor and openapi read
// too (package server owns its schema).
type serveConfig = server.Config

// tableConfig is one table of a serveConfig.
type tableConfig = server.TableConfig

// loadServeConfig reads, parses and validates a config file.
func loadServeConfig(path string) (*serveConfig, error) { return server.LoadConfig(path) }

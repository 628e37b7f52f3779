package main

import (
	"context"
	"fmt"
	"os"
)

// Example runs the CLI in-process, as main does, and shows the exit code of
// a usage error.
func Example() {
	e := &env{stdout: os.Stdout, stderr: os.Stdout, getenv: func(string) string { return "" }}
	code := run(context.Background(), e, []string{"migrate", "up"})
	fmt.Println("exit code:", code)
	// Output:
	// tablegate migrate: no database: pass --database-url or set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)
	// Run "tablegate migrate --help" for usage.
	// exit code: 2
}

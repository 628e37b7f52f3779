package main

import (
	"context"
	"errors"
)

// errNotYet marks a command whose package has not landed yet.
var errNotYet = errors.New("not available in this build yet")

func runOpenAPI(ctx context.Context, e *env, args []string) error { return errNotYet }

package dataapi

import (
	"context"
	"errors"
	"time"
)

// ReloadChannel is the channel [API.Listen] listens on, PostgREST's: a
// migration ends with NOTIFY pgrst, 'reload schema' to have the new
// tables, columns, keys and functions served.
const ReloadChannel = "pgrst"

// listenRetry is the pause before Listen takes a connection again after
// losing one.
const listenRetry = time.Second

// Listen reloads the catalogue ([API.Reload], with its checks) whenever
// a notification arrives on [ReloadChannel] with the payload
// "reload schema" or an empty one, as PostgREST does ("reload config"
// and other payloads are ignored), until ctx ends; it then returns
// ctx's error. It holds one connection of the pool while it runs, and
// closes it at the end (its LISTEN never reaches another request); a
// lost connection is taken again after a pause. A failed reload is
// logged and the previous catalogue kept. Run it in its own goroutine,
// once per API, and end ctx before closing the pool.
func (a *API) Listen(ctx context.Context) error {
	for {
		err := a.listenOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.log.Warn("dataapi: schema reload listener lost its connection; retrying", "error", err, "retry_in", listenRetry)
		t := time.NewTimer(listenRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (a *API) listenOnce(ctx context.Context) error {
	conn, err := a.d.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	pc := conn.Hijack() // never back to the pool with its LISTEN
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = pc.Close(cctx)
	}()
	if _, err := pc.Exec(ctx, "listen "+ReloadChannel); err != nil {
		return err
	}
	if a.listening != nil {
		a.listening()
	}
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != "" && n.Payload != "reload schema" {
			continue
		}
		err = a.Reload(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("dataapi: schema reload failed; the previous schema is served", "error", err)
		}
		if a.reloaded != nil {
			a.reloaded(err)
		}
	}
}

package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// graceful holds what a bounded shutdown of one http.Server needs: the
// base context of every request, cancelled when running requests outlive
// the limit.
type graceful struct {
	base   context.Context
	cancel context.CancelFunc
}

// newGraceful sets srv's BaseContext so that shutdown can cancel the
// requests still running at its limit.
func newGraceful(srv *http.Server) *graceful {
	g := &graceful{}
	g.base, g.cancel = context.WithCancel(context.Background())
	srv.BaseContext = func(net.Listener) context.Context { return g.base }
	return g
}

// shutdown stops srv within limit: it stops accepting connections and
// lets running requests finish; at limit minus a grace (a quarter of the
// limit, at most 2 s) it cancels the requests still running — their
// statements are cancelled in Postgres and they answer 503, as do
// requests still waiting for a pooled connection — and at the limit it
// closes whatever remains. It returns the number of requests that had to
// be cancelled. A shutdown that had to cancel is still a normal exit.
func (g *graceful) shutdown(out io.Writer, srv *http.Server, limit time.Duration) {
	grace := min(limit/4, 2*time.Second)
	sctx, cancel := context.WithTimeout(context.Background(), limit-grace)
	err := srv.Shutdown(sctx)
	cancel()
	if err == nil {
		g.cancel()
		return
	}
	fmt.Fprintf(out, "  running requests outlived %s: cancelling them\n", (limit - grace).Round(time.Millisecond))
	g.cancel()
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(gctx); err != nil {
		fmt.Fprintln(out, "  closing the connections of requests that did not end")
		_ = srv.Close()
	}
}

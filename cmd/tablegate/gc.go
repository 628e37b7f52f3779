package main

import "runtime/debug"

// serverGCPercent is the garbage collector's target of serve and demo
// unless GOGC is set: the heap may grow to five times what is live before
// a collection. A server's live heap is small (a few MB: the pool, the
// caches, the requests in flight), and at the default (100) it collects
// every few thousand requests, a tenth of its CPU per request; at 400
// that share falls to a fraction, for a few MB more memory. GOGC (and
// GOMEMLIMIT, which the runtime reads itself) still decide when set.
const serverGCPercent = 400

// tuneGC applies serverGCPercent unless the environment sets GOGC.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serverGCPercent)
	}
}

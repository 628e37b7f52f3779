package events

import "time"

// SetPruneEvery makes hubs built from now on prune every d, until restore
// is called. Not for parallel tests.
func SetPruneEvery(d time.Duration) (restore func()) {
	old := pruneEvery
	pruneEvery = d
	return func() { pruneEvery = old }
}

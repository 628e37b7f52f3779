// Package integration holds end-to-end tests that need heavier tools than
// the library itself: testcontainers (a Postgres in Docker when no other
// server answers), OpenAPI validators, node interop, headless Chromium. It
// is its own module so none of that reaches the go.mod of applications
// that import tablegate. Its subpackages group the node and browser tests:
// ssr (@supabase/ssr cookies and auth flows), supabasejs (supabase-js
// against the data API), events (eventsource and EventSource in Chromium)
// and cli (the built tablegate binary in a browser and under the OpenAPI
// tools).
package integration

import (
	"testing"

	"github.com/tablegate/tablegate/integration/internal/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }

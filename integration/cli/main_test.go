// Package cli_test drives the tablegate binary, built from this checkout as
// a user builds it, with the real supabase-js, headless Chromium and the
// third-party OpenAPI tools.
package cli_test

import (
	"testing"

	"github.com/tablegate/tablegate/integration/internal/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }

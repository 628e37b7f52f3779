package nodetest

import (
	"testing"
	"time"
)

// TestBrowserLaunches proves the shared launcher (integration/node/browser.mjs)
// starts Debian's Chromium headless on this machine.
func TestBrowserLaunches(t *testing.T) {
	RequireChromium(t)
	var out struct {
		Text string `json:"text"`
	}
	Run(t, 60*time.Second, "browser-smoke.mjs", map[string]string{"html": "<h1>tablegate</h1>"}, &out)
	if out.Text != "tablegate" {
		t.Fatalf("page text = %q, want tablegate", out.Text)
	}
}

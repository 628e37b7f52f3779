package authctx

import (
	"net/http"
	"strings"
	"testing"
)

// TestNilResolverFailsAtWiring: the value a failed New returns (nil) must
// not start a server that panics on its first request; wiring it panics at
// once with a message naming the unchecked error.
func TestNilResolverFailsAtWiring(t *testing.T) {
	t.Parallel()
	var rv *Resolver
	for name, wire := range map[string]func(){
		"Middleware": func() { rv.Middleware(http.NotFoundHandler()) },
		"CrossSite":  func() { rv.CrossSite(http.NotFoundHandler()) },
	} {
		func() {
			defer func() {
				p, _ := recover().(string)
				if !strings.Contains(p, "authctx.New returned an error that was not checked") {
					t.Errorf("%s on nil: recovered %q", name, p)
				}
			}()
			wire()
		}()
	}
}

package authctx

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/syncbuf"
)

// TestJWKSWarningsRedactThePassword: a JWKS URL with a password in it is
// logged with the password redacted, as Go's own errors show it.
func TestJWKSWarningsRedactThePassword(t *testing.T) {
	t.Parallel()
	testKeys(t)
	srv := newJWKSServer(t, nil) // answers 503
	var logs syncbuf.Buffer
	u := strings.Replace(srv.URL, "http://", "http://user:S3CRETPW@", 1) + "/jwks.json"
	rv, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{JWKSURL: u, Issuer: testIssuer,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if !strings.Contains(logs.String(), "JWKS fetch failed") {
		t.Fatalf("no warning logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), "S3CRETPW") {
		t.Errorf("the password is in the log: %s", logs.String())
	}
}

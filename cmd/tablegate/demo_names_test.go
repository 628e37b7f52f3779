package main

import (
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/internal/demo"
)

// The demo's fixed identities and schema, as the tests name them.
const (
	demoTenantA     = demo.TenantA
	demoTenantB     = demo.TenantB
	demoUserID      = demo.UserID
	demoAdminID     = demo.AdminID
	demoApproverID  = demo.ApproverID
	demoAnonUserID  = demo.AnonUserID
	demoOtherUserID = demo.OtherUserID
	demoUserEmail   = demo.UserEmail
	demoKeyName     = demo.KeyName
)

var demoSchemaSQL = demo.SchemaSQL

type whoami = demo.Whoami

// demoHandler serves the demo's routes on a mux of their own, for tests
// that build the resolver around them themselves.
func demoHandler(r *demo.Routes) http.Handler {
	mux := http.NewServeMux()
	r.Mount(mux)
	return mux
}

// demoResolverConfig is the caller resolution of the demo: tokens of the
// project at projectURL verified against jwksURL, the secret key as a
// service apikey, and the publishable key.
func demoResolverConfig(projectURL, jwksURL, secretKey, publishableKey string, refresh bool) *authctx.Config {
	return &authctx.Config{
		ProjectURL:      projectURL,
		VerifierConfig:  authctx.VerifierConfig{JWKSURL: jwksURL},
		Secret:          true,
		SecretKeys:      map[string]string{demoKeyName: secretKey},
		PublishableKeys: []string{publishableKey},
		Refresh:         refresh,
	}
}

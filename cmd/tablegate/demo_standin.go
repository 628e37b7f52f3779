package main

import (
	"net/http"
	"time"

	"github.com/tablegate/tablegate/internal/demo"
)

// demoStandIn gives the demo its signing keys (keys.go, token.go) and the
// auth server stand-in (demo_gotrue.go): the one place the demo reaches
// them.
func demoStandIn() demo.StandIn {
	return demo.StandIn{
		LoadKeys: func(path string) (demo.Keys, error) {
			ks, err := loadKeyFile(path)
			if err != nil {
				return nil, err
			}
			return newDemoKeys(ks)
		},
		CreateKeys: func(path string) (demo.Keys, error) {
			k, err := newSigningJWK()
			if err != nil {
				return nil, err
			}
			if err := writeKeyFile(path, []jwk{k}); err != nil {
				return nil, err
			}
			ks, err := loadKeyFile(path)
			if err != nil {
				return nil, err
			}
			return newDemoKeys(ks)
		},
		NewAuthServer: func(k demo.Keys, issuer, publishableKey, siteURL string, sent func(email, code, link string)) demo.AuthServer {
			s := newDemoAuthServer(k.(*demoKeys).ks, issuer, publishableKey)
			s.siteURL = siteURL
			s.sent = func(m sentOTP) { sent(m.Email, m.Code, m.Link) }
			return demoAuth{s}
		},
	}
}

// demoKeys are a keySet as the demo's keys.
type demoKeys struct {
	ks  *keySet
	kid string
}

func newDemoKeys(ks *keySet) (*demoKeys, error) {
	signer, err := ks.signer()
	if err != nil {
		return nil, err
	}
	return &demoKeys{ks: ks, kid: signer.kid}, nil
}

func (k *demoKeys) KID() string        { return k.kid }
func (k *demoKeys) PublicJWKS() []byte { return k.ks.publicJWKS() }
func (k *demoKeys) Mint(t demo.Token, now time.Time) (string, error) {
	return mintToken(k.ks, tokenSpecOf(t), now)
}

func tokenSpecOf(t demo.Token) tokenSpec {
	return tokenSpec{Sub: t.Sub, Anonymous: t.Anonymous, Tenant: t.Tenant, Roles: t.Roles, TTL: t.TTL, Issuer: t.Issuer}
}

// demoAuth is the stand-in as the demo's auth server.
type demoAuth struct{ s *demoAuthServer }

func (a demoAuth) Routes(mux *http.ServeMux) { a.s.routes(mux) }
func (a demoAuth) AddAccount(t demo.Token, email, phone, password string) {
	a.s.addAccount(tokenSpecOf(t), email, phone, password)
}
func (a demoAuth) SignIn(t demo.Token) (string, string, error) { return a.s.signIn(tokenSpecOf(t)) }

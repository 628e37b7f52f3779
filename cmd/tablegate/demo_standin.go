package main

import (
	"net/http"
	"time"

	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/demo"
)

// demoStandIn gives the demo its signing keys (internal/keys) and the
// stand-in auth server (internal/authstub): the one place the demo reaches
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
		NewAuthServer: func(k demo.Keys, issuer, publishableKey, siteURL string, sent func(email, code, link string)) (demo.AuthServer, error) {
			s, err := authstub.New(authstub.Config{Keys: k.(*demoKeys).ks, Issuer: issuer, APIKey: publishableKey, SiteURL: siteURL,
				SentFunc: func(m authstub.Sent) { sent(m.Email, m.Code, m.Link) }})
			if err != nil {
				return nil, err
			}
			return demoAuth{s}, nil
		},
	}
}

// demoKeys are a keySet as the demo's keys.
type demoKeys struct {
	ks  *keySet
	kid string
}

func newDemoKeys(ks *keySet) (*demoKeys, error) {
	signer, err := ks.Signer()
	if err != nil {
		return nil, err
	}
	return &demoKeys{ks: ks, kid: signer.Kid}, nil
}

func (k *demoKeys) KID() string        { return k.kid }
func (k *demoKeys) PublicJWKS() []byte { return k.ks.PublicJWKS() }
func (k *demoKeys) Mint(t demo.Token, now time.Time) (string, error) {
	return mintToken(k.ks, tokenSpecOf(t), now)
}

func tokenSpecOf(t demo.Token) tokenSpec {
	return tokenSpec{Sub: t.Sub, Anonymous: t.Anonymous, Tenant: t.Tenant, Roles: t.Roles, TTL: t.TTL, Issuer: t.Issuer}
}

// demoAuth is the stand-in as the demo's auth server.
type demoAuth struct{ s *authstub.Server }

func (a demoAuth) Routes(mux *http.ServeMux) { a.s.Routes(mux) }
func (a demoAuth) AddAccount(t demo.Token, email, phone, password string) {
	a.s.AddAccount(authstub.Account{Token: tokenSpecOf(t), Email: email, Phone: phone, Password: password})
}
func (a demoAuth) SignIn(t demo.Token) (string, string, error) { return a.s.SignIn(tokenSpecOf(t)) }

package authctx

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkResolve measures caller resolution for a Bearer token:
//
//   - memo_hit: a token verified before (the hot path, target < 1 µs, 0 allocs);
//   - cold_es256: the memo disabled, every request verifies the ES256
//     signature (target within 10% of bare_golang_jwt);
//   - bare_golang_jwt: golang-jwt parsing the same token with the same key
//     and no resolver around it, the baseline of cold_es256.
func BenchmarkResolve(b *testing.B) {
	bd := setup(b, nil)
	tok := bd.token(nil)
	cold := setup(b, func(c *Config) { c.MemoSize = -1 })

	b.Run("memo_hit", func(b *testing.B) {
		r := bearerReq(tok)
		if a := bd.rv.Resolve(r).Auth; a.Kind != KindUser {
			b.Fatalf("%s %v", a.Kind, a.Err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if bd.rv.Resolve(r).Auth.Kind != KindUser {
				b.Fatal("not a user")
			}
		}
	})
	b.Run("memo_hit_parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := bearerReq(tok)
			for pb.Next() {
				if bd.rv.Resolve(r).Auth.Kind != KindUser {
					b.Fatal("not a user")
				}
			}
		})
	})
	b.Run("cold_es256", func(b *testing.B) {
		r := bearerReq(tok)
		b.ReportAllocs()
		for b.Loop() {
			if cold.rv.Resolve(r).Auth.Kind != KindUser {
				b.Fatal("not a user")
			}
		}
	})
	b.Run("verifier_es256", func(b *testing.B) {
		v := cold.rv.Verifier()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare_golang_jwt", func(b *testing.B) {
		p := jwt.NewParser(jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired())
		key := &ecKey.PublicKey
		kf := func(*jwt.Token) (any, error) { return key, nil }
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.ParseWithClaims(tok, jwt.MapClaims{}, kf); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Both paths alternate in one loop so load from other processes hits
	// them alike; the metric cold/bare is the ratio of their total times.
	b.Run("cold_vs_bare_interleaved", func(b *testing.B) {
		r := bearerReq(tok)
		p := jwt.NewParser(jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired())
		key := &ecKey.PublicKey
		kf := func(*jwt.Token) (any, error) { return key, nil }
		var coldT, bareT time.Duration
		coldRun := func() {
			t0 := time.Now()
			if cold.rv.Resolve(r).Auth.Kind != KindUser {
				b.Fatal("not a user")
			}
			coldT += time.Since(t0)
		}
		bareRun := func() {
			t0 := time.Now()
			if _, err := p.ParseWithClaims(tok, jwt.MapClaims{}, kf); err != nil {
				b.Fatal(err)
			}
			bareT += time.Since(t0)
		}
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 { // alternate the order too
				coldRun()
				bareRun()
			} else {
				bareRun()
				coldRun()
			}
		}
		b.ReportMetric(float64(coldT)/float64(bareT), "cold/bare")
		b.ReportMetric(float64(coldT.Nanoseconds())/float64(b.N), "cold-ns/op")
		b.ReportMetric(float64(bareT.Nanoseconds())/float64(b.N), "bare-ns/op")
	})
}

package ssrcookie

import (
	"net/http"
	"testing"
)

func BenchmarkRead(b *testing.B) {
	v := loadVectors(b)
	for _, tc := range []struct {
		name string
		json string
	}{{"single", v.Small.SessionJSON}, {"chunked", v.Large.SessionJSON}} {
		_, cookies := Write(vectorName, []byte(tc.json), nil, Options{})
		cookies = append([]*http.Cookie{{Name: "theme", Value: "dark"}}, cookies...)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(cookies, vectorName); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	v := loadVectors(b)
	req := []*http.Cookie{{Name: vectorName, Value: "base64-old"}}
	b.ReportAllocs()
	for b.Loop() {
		set, _ := Write(vectorName, []byte(v.Large.SessionJSON), req, Options{})
		for _, c := range set {
			_ = Serialize(c)
		}
	}
}

// BenchmarkHeaderCookies compares splitting the raw Cookie header of a
// chunked session with HeaderCookies and with net/http, each followed by
// Read.
func BenchmarkHeaderCookies(b *testing.B) {
	v := loadVectors(b)
	_, cookies := Write(vectorName, []byte(v.Large.SessionJSON), nil, Options{})
	r := &http.Request{Header: http.Header{}}
	r.AddCookie(&http.Cookie{Name: "theme", Value: "dark"})
	for _, c := range cookies {
		r.AddCookie(c)
	}
	b.Run("HeaderCookies", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(HeaderCookies(r.Header["Cookie"], vectorName), vectorName); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net_http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Read(r.Cookies(), vectorName); err != nil {
				b.Fatal(err)
			}
		}
	})
}

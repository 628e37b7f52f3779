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

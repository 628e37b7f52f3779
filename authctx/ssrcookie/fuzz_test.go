package ssrcookie

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzRead feeds arbitrary Cookie headers to Read: it must never panic,
// must honour the size limit, and anything it returns from a base64 value
// must be valid JSON that Write stores and Read returns unchanged.
func FuzzRead(f *testing.F) {
	v := loadVectors(f)
	small := strings.SplitN(v.Small.SetCookie[0], ";", 2)[0]
	f.Add(small)
	f.Add("k=base64-eyJhIjoxfQ")
	f.Add("k.0=base64-eyJh; k.1=IjoxfQ")
	f.Add("k=%7B%22a%22%3A1%7D")
	f.Add("k=; k.0=base64-e; k.1=yJhIjoxfQ==; k.5=x")
	f.Add("k.0=base64-+/; k.00=x")
	f.Add("k=base64-_-_-")
	f.Fuzz(func(t *testing.T, header string) {
		r := &http.Request{Header: http.Header{"Cookie": {header}}}
		cookies := r.Cookies()
		for _, name := range []string{"k", vectorName} {
			got, err := Read(cookies, name)
			if err != nil {
				if !errors.Is(err, ErrNoSession) {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if len(got) == 0 || len(got) > MaxValueBytes {
				t.Fatalf("returned %d bytes", len(got))
			}
			if !json.Valid(got) {
				continue // legacy raw path returns the value as stored
			}
			_, _ = ParseSession(got)
			set, after := Write(name, got, cookies, Options{Domain: "example.com"})
			for _, c := range set {
				_ = Serialize(c)
			}
			back, err := Read(after, name)
			if err != nil || !bytes.Equal(back, got) {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

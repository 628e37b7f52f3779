package db

import (
	"encoding/json"
	"testing"
)

var roleInputs = []string{
	`{}`, ` { } `, `{"sub":"u"}`, `{"role":"authenticated"}`, `{"sub":"u","role":"anon"}`,
	`{"role":"editor","x":[1,{"role":"service_role"}]}`, `{"a":{"role":"x"},"role":"y"}`,
	`{"role":null}`, `{"role":5}`, `{"role":{"x":1}}`, `{"role":["a"]}`, `{"role":true}`,
	`{"role":"a","role":"b"}`, `{"role":"a","role":5}`, `{"r\u006fle":"x"}`, `{"role":"a\"b"}`,
	`{"s":"}\"{","role":"z"}`, "{\n\t\"role\" : \"authenticated\"\r\n}", `{"x":"\\","role":"q"}`,
	`{"is_anonymous":false,"app_metadata":{"roles":["admin"]},"role":"authenticated","n":-1.5e3}`,
}

// The scan reads the role claim exactly as encoding/json does whenever it
// decides.
func TestScanRoleAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range roleInputs {
		role, claimed, ok := scanRole([]byte(in))
		if !ok {
			continue
		}
		wr, wc := decodeRole([]byte(in))
		if role != wr || claimed != wc {
			t.Errorf("%s: scan (%q, %v), encoding/json (%q, %v)", in, role, claimed, wr, wc)
		}
	}
	for _, in := range []string{`{"role":"authenticated","sub":"u"}`, `{"sub":"u"}`, `{"role":"a","role":5}`} {
		if _, _, ok := scanRole([]byte(in)); !ok {
			t.Errorf("%s: the scan did not decide", in)
		}
	}
}

// UserCaller reads a request role claim without allocating.
func TestUserCallerAllocations(t *testing.T) {
	raw := []byte(`{"sub":"11111111-1111-4111-8111-111111111111","role":"authenticated","app_metadata":{"roles":["a"]}}`)
	if n := testing.AllocsPerRun(100, func() { _ = UserCaller("u", raw) }); n != 0 {
		t.Errorf("UserCaller allocates %v times", n)
	}
	if c := UserCaller("u", raw); c.Role() != RoleAuthenticated {
		t.Errorf("role %q", c.Role())
	}
}

func FuzzScanRole(f *testing.F) {
	for _, in := range roleInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		role, claimed, ok := scanRole(b)
		if !ok || !json.Valid(b) {
			return
		}
		if wr, wc := decodeRole(b); role != wr || claimed != wc {
			t.Errorf("%q: scan (%q, %v), encoding/json (%q, %v)", b, role, claimed, wr, wc)
		}
	})
}

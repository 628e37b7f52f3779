package doctor

import (
	"strings"
	"testing"
)

// TestDoctorRedactsJWKSPassword: doctor's JWKS check names the URL with
// its password redacted, reachable or not.
func TestDoctorRedactsJWKSPassword(t *testing.T) {
	for _, u := range []string{"http://user:S3CRETPW@127.0.0.1:1/jwks.json"} {
		c := checkJWKS(t.Context(), Options{JWKSURL: u, Getenv: func(string) string { return "" }}, nil, nil)
		if strings.Contains(c.Detail, "S3CRETPW") || !strings.Contains(c.Detail, "user:xxxxx@") {
			t.Errorf("detail %q", c.Detail)
		}
	}
}

// TestDoctorOutputEscapesNames: a name holding a newline or a terminal
// escape cannot print a line of its own.
func TestDoctorOutputEscapesNames(t *testing.T) {
	var b strings.Builder
	Print(&b, []Check{{Warn, "policies", "public.t policy evil\n✓ all good\x1b[2J: x", "fix\nit"}}, false)
	out := b.String()
	if strings.Contains(out, "\n✓ all good") || strings.Contains(out, "\x1b") || strings.Contains(out, "fix\nit") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(out, `evil\n✓ all good\x1b[2J`) {
		t.Errorf("the name is not shown escaped: %q", out)
	}
}

// The checklist stays one line per check: a multi-line error (pgx lists
// each address it tried as "\n\t…") prints as one line, never as a
// literal \n\t; a bare newline in a name stays escaped.
func TestDoctorPrintableOneLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"failed to connect to `user=x database=y`:\n\t127.0.0.1:1: dial error\n\t[::1]:1: dial error": "failed to connect to `user=x database=y`; 127.0.0.1:1: dial error; [::1]:1: dial error",
		"x\n✓ all good":   `x\n✓ all good`,
		"red \x1b[31m":    `red \x1b[31m`,
		"trailing\n\t":    "trailing",
		"plain text only": "plain text only",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

package ssrcookie

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestHeaderCookiesForMatchesOneByOne: one pass for several names reads
// exactly the cookies HeaderCookies reads name by name (first pair of a
// name wins, chunks up to MaxChunks, trimmed names and values), and reads
// nothing else.
func TestHeaderCookiesForMatchesOneByOne(t *testing.T) {
	t.Parallel()
	names := []string{"sb-x-auth-token-flow-aaaaaaaa-code-verifier", "sb-x-auth-token-flow-bbbbbbbb-code-verifier", "sb", "a.b"}
	lines := []string{
		"sb-x-auth-token-flow-aaaaaaaa-code-verifier=1; other=2; sb-x-auth-token-flow-bbbbbbbb-code-verifier.0=c0",
		" sb-x-auth-token-flow-bbbbbbbb-code-verifier.1 = c1 ;sb-x-auth-token-flow-aaaaaaaa-code-verifier=dup; noequals; sb=3",
		"sb.0=x; sb.01=bad; sb.65=far; sb.64=edge; a.b=5; a.b.2=6; a=7; sb-x-auth-token-flow-cccccccc-code-verifier=no",
	}
	var want []string
	for _, n := range names {
		for _, c := range HeaderCookies(lines, n) {
			want = append(want, c.Name+"="+c.Value)
		}
	}
	var got []string
	for _, c := range HeaderCookiesFor(lines, names...) {
		got = append(got, c.Name+"="+c.Value)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("HeaderCookiesFor: %q\nwant %q", got, want)
	}
	if len(want) < 8 {
		t.Fatalf("the fixture reads too little: %q", want)
	}
	// Many names over a long header.
	var b strings.Builder
	var many []string
	for i := range 300 {
		n := fmt.Sprintf("f-%08d-code-verifier", i)
		many = append(many, n)
		fmt.Fprintf(&b, "%s=v%d; pad%d=%s; ", n, i, i, strings.Repeat("p", 100))
	}
	if got := HeaderCookiesFor([]string{b.String()}, many...); len(got) != 300 || got[299].Value != "v299" {
		t.Errorf("300 names: %d cookies", len(got))
	}
}

// TestHeaderCookiesAllocs: reading one name allocates only the cookies it
// returns.
func TestHeaderCookiesAllocs(t *testing.T) {
	lines := []string{"a=1; sb=2; b=3; sb.0=4"}
	if n := testing.AllocsPerRun(100, func() { _ = HeaderCookies(lines, "sb") }); n > 4 {
		t.Errorf("%v allocations for two cookies", n)
	}
}

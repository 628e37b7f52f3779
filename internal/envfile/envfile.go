// Package envfile writes KEY=VALUE lines a POSIX shell can source, as
// tablegate demo --print-env and tablegate init write them.
package envfile

import (
	"fmt"
	"strings"
)

// Var is one variable of an env file.
type Var struct{ Key, Value string }

// Format renders vars as lines a POSIX shell can source (". FILE"):
// export KEY=VALUE, the value single-quoted whenever it holds a character
// the shell would interpret (the database URL's "&" and "?", spaces,
// quotes). Values made only of safe characters (tokens, UUIDs, plain
// URLs) stay bare, so line-oriented KEY=VALUE readers keep working for
// them.
func Format(vars []Var) []byte {
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v.Key, Quote(v.Value))
	}
	return []byte(b.String())
}

// Quote returns s unchanged when every byte is shell-safe, else s in
// single quotes with each single quote written as quote, backslash,
// quote, quote.
func Quote(s string) string {
	safe := s != ""
	for i := 0; i < len(s) && safe; i++ {
		c := s[i]
		safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("-_.,:/@%+=", c) >= 0
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

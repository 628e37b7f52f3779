// Package inlist parses the value list of an in filter, so that the list
// queries of package rest and the event stream filters of package events
// read a filter alike.
package inlist

import "strings"

// Parse parses the value of an in filter, (a,b,"c,d"): double-quoted
// items may hold commas, parentheses and backslash escapes. ok is false
// for anything else.
func Parse(s string) ([]string, bool) {
	if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
		return nil, false
	}
	s = s[1 : len(s)-1]
	out := []string{}
	if s == "" {
		return out, true
	}
	var cur strings.Builder
	quoted, wasQuoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"' && (quoted || cur.Len() == 0 && !wasQuoted):
			quoted = !quoted
			wasQuoted = true
		case c == ',' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
			wasQuoted = false
		case wasQuoted && !quoted:
			return nil, false // text after a closing quote
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, false
	}
	return append(out, cur.String()), true
}

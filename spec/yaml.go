package spec

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// The YAML form is emitted from the same ordered tree as the JSON form by a
// small deterministic emitter (no YAML library in the module's
// dependencies). Block style throughout; every string scalar is written
// double-quoted with JSON escapes, which YAML 1.2 (and 1.1) reads as the
// same string, so no value can turn into a number, boolean or null. Keys
// are written plain when they are unambiguous identifiers, else quoted.

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// yamlReserved are plain words some YAML parsers read as non-strings.
var yamlReserved = map[string]bool{
	"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
	"true": true, "false": true, "null": true,
}

func yamlKey(k string) string {
	if plainKey.MatchString(k) && !yamlReserved[strings.ToLower(k)] {
		return k
	}
	return yamlString(k)
}

// yamlString double-quotes s for YAML: JSON escapes, plus \u escapes for
// every rune YAML does not allow unescaped (C0/C1 controls, DEL, line and
// paragraph separators, BOM, non-characters), so every parser reads s back
// exactly.
func yamlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// yamlScalar renders a scalar for YAML.
func yamlScalar(v any) (string, error) {
	if s, ok := v.(string); ok {
		return yamlString(s), nil
	}
	return scalarText(v)
}

// toYAML renders an ordered tree as a YAML 1.2 document.
func toYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	switch x := v.(type) {
	case *omap:
		if x.len() == 0 {
			b.WriteString("{}\n")
			break
		}
		if err := yamlMap(&b, x, ""); err != nil {
			return nil, err
		}
	case []any:
		if len(x) == 0 {
			b.WriteString("[]\n")
			break
		}
		if err := yamlSeq(&b, x, ""); err != nil {
			return nil, err
		}
	default:
		s, err := yamlScalar(v)
		if err != nil {
			return nil, err
		}
		b.WriteString(s + "\n")
	}
	return b.Bytes(), nil
}

// yamlMap writes the entries of o, each line starting at indent.
func yamlMap(b *bytes.Buffer, o *omap, indent string) error {
	for _, k := range o.keys {
		b.WriteString(indent)
		b.WriteString(yamlKey(k))
		b.WriteByte(':')
		if err := yamlValue(b, o.m[k], indent); err != nil {
			return err
		}
	}
	return nil
}

// yamlSeq writes the items of a, each "- " starting at indent.
func yamlSeq(b *bytes.Buffer, a []any, indent string) error {
	for _, e := range a {
		b.WriteString(indent)
		b.WriteByte('-')
		switch x := e.(type) {
		case *omap:
			if x.len() == 0 {
				b.WriteString(" {}\n")
				continue
			}
			// The first entry shares the dash's line; the rest align with it.
			b.WriteByte(' ')
			var inner bytes.Buffer
			if err := yamlMap(&inner, x, indent+"  "); err != nil {
				return err
			}
			b.Write(inner.Bytes()[len(indent)+2:])
		case []any:
			if len(x) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteByte('\n')
			if err := yamlSeq(b, x, indent+"  "); err != nil {
				return err
			}
		default:
			s, err := yamlScalar(e)
			if err != nil {
				return err
			}
			b.WriteString(" " + s + "\n")
		}
	}
	return nil
}

// yamlValue writes the value of a mapping entry whose key was just written.
func yamlValue(b *bytes.Buffer, v any, indent string) error {
	switch x := v.(type) {
	case *omap:
		if x.len() == 0 {
			b.WriteString(" {}\n")
			return nil
		}
		b.WriteByte('\n')
		return yamlMap(b, x, indent+"  ")
	case []any:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return nil
		}
		b.WriteByte('\n')
		return yamlSeq(b, x, indent+"  ")
	default:
		s, err := yamlScalar(v)
		if err != nil {
			return err
		}
		b.WriteString(" " + s + "\n")
	}
	return nil
}

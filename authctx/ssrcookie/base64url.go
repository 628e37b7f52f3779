package ssrcookie

import "encoding/base64"

// encodeBase64URL is stringToBase64URL: RFC 4648 §5 without padding.
func encodeBase64URL(b []byte) string {
	return base64.RawURLEncoding.EncodeToString(b)
}

// fromBase64URL maps a byte to its 6-bit value, -2 for the characters the
// JavaScript decoder skips (space, tab, LF, CR, '=') and -1 for the rest.
var fromBase64URL = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for _, c := range " \t\n\r=" {
		t[c] = -2
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = int8(i)
	}
	return t
}()

// decodeBase64URL decodes like stringFromBase64URL in @supabase/ssr: skipped
// characters are ignored anywhere, any other character outside the
// alphabet fails, and trailing bits that do not make a whole byte are
// dropped. ok is false on failure.
func decodeBase64URL(s string) (out []byte, ok bool) {
	// Fast path: a well-formed unpadded value (what every writer emits)
	// decodes with the standard decoder, which agrees with the JavaScript
	// one on such input.
	if len(s)%4 != 1 {
		if b, err := base64.RawURLEncoding.Strict().DecodeString(s); err == nil {
			return b, true
		}
	}
	return decodeBase64URLSlow(s)
}

// decodeBase64URLSlow is the character-by-character port of
// stringFromBase64URL.
func decodeBase64URLSlow(s string) (out []byte, ok bool) {
	out = make([]byte, 0, len(s)*3/4)
	var queue uint32
	var bits uint
	for i := 0; i < len(s); i++ {
		v := fromBase64URL[s[i]]
		switch {
		case v >= 0:
			queue = queue<<6 | uint32(v)
			bits += 6
			if bits >= 8 {
				bits -= 8
				out = append(out, byte(queue>>bits))
				queue &= 1<<bits - 1
			}
		case v == -2:
		default:
			return nil, false
		}
	}
	return out, true
}

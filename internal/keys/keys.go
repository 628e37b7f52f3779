// Package keys reads, writes and creates the signing keys tablegate's CLI
// works with, in the format of the Supabase CLI's [auth] signing_keys_path
// (a JSON array of private JWKs), publishes their public JWKS, and mints
// development access tokens shaped like GoTrue's with them.
//
// It serves "tablegate keys", "token", "doctor", "init" and "demo", and
// the stand-in auth server of internal/authstub. A [Set] is safe for
// concurrent use once loaded: nothing changes it.
package keys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// JWK is one JSON Web Key in the shape the Supabase CLI writes to
// signing_keys_path (config.JWK): base64url values without padding.
type JWK struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid,omitempty"`
	Use    string   `json:"use,omitempty"`
	KeyOps []string `json:"key_ops,omitempty"`
	Alg    string   `json:"alg,omitempty"`
	Ext    bool     `json:"ext,omitempty"`
	Crv    string   `json:"crv,omitempty"`
	X      string   `json:"x,omitempty"`
	Y      string   `json:"y,omitempty"`
	D      string   `json:"d,omitempty"`
	// RSA members (RFC 7518 §6.3).
	N  string `json:"n,omitempty"`
	E  string `json:"e,omitempty"`
	P  string `json:"p,omitempty"`
	Q  string `json:"q,omitempty"`
	DP string `json:"dp,omitempty"`
	DQ string `json:"dq,omitempty"`
	QI string `json:"qi,omitempty"`
	// K (symmetric) is read only to say it is unsupported.
	K string `json:"k,omitempty"`
}

// Signing algorithms [NewJWK] creates and [Mint] signs with.
const (
	ES256 = "ES256" // ECDSA P-256 with SHA-256, the Supabase default
	RS256 = "RS256" // RSA PKCS #1 v1.5 with SHA-256 (2048 bits or more)
	EdDSA = "EdDSA" // Ed25519
)

// Key is a parsed private key: ES256 (P-256), RS256 (RSA ≥ 2048 bits) or
// EdDSA (Ed25519).
type Key struct {
	Kid     string
	Alg     string // ES256, RS256 or EdDSA
	Private crypto.Signer
	Sign    bool // key_ops contains "sign" (or key_ops is absent)
}

// Method returns the golang-jwt signing method of the key.
func (k Key) Method() jwt.SigningMethod {
	switch k.Alg {
	case RS256:
		return jwt.SigningMethodRS256
	case EdDSA:
		return jwt.SigningMethodEdDSA
	}
	return jwt.SigningMethodES256
}

// Set is the content of a signing keys file, in the file's order.
type Set struct {
	Keys []Key
}

// Signer returns the key that signs: the first with key_ops "sign".
func (ks *Set) Signer() (Key, error) {
	for _, k := range ks.Keys {
		if k.Sign {
			return k, nil
		}
	}
	return Key{}, errors.New("no key with key_ops [\"sign\"] in the signing keys file")
}

// PublicKey returns the public key named by a token's kid, for servers
// that verify their own tokens (a jwt.Keyfunc).
func (ks *Set) PublicKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	for _, k := range ks.Keys {
		if k.Kid == kid && k.Method().Alg() == t.Method.Alg() {
			return k.Private.Public(), nil
		}
	}
	return nil, errors.New("unknown kid")
}

// PublicJWKS returns the public JWKS document ({"keys":[...]}) in the
// shape GoTrue serves at /auth/v1/.well-known/jwks.json.
func (ks *Set) PublicJWKS() []byte {
	type pub struct {
		Alg    string   `json:"alg"`
		Crv    string   `json:"crv,omitempty"`
		E      string   `json:"e,omitempty"`
		Ext    bool     `json:"ext"`
		KeyOps []string `json:"key_ops"`
		Kid    string   `json:"kid"`
		Kty    string   `json:"kty"`
		N      string   `json:"n,omitempty"`
		Use    string   `json:"use"`
		X      string   `json:"x,omitempty"`
		Y      string   `json:"y,omitempty"`
	}
	doc := struct {
		Keys []pub `json:"keys"`
	}{Keys: []pub{}}
	for _, k := range ks.Keys {
		p := pub{Alg: k.Alg, Ext: true, KeyOps: []string{"verify"}, Kid: k.Kid, Use: "sig"}
		switch priv := k.Private.(type) {
		case *ecdsa.PrivateKey:
			p.Kty, p.Crv = "EC", "P-256"
			p.X, p.Y = b64(pad32(priv.X.Bytes())), b64(pad32(priv.Y.Bytes()))
		case *rsa.PrivateKey:
			p.Kty = "RSA"
			p.N, p.E = b64(priv.N.Bytes()), b64(big.NewInt(int64(priv.E)).Bytes())
		case ed25519.PrivateKey:
			p.Kty, p.Crv = "OKP", "Ed25519"
			p.X = b64(priv.Public().(ed25519.PublicKey))
		}
		doc.Keys = append(doc.Keys, p)
	}
	b, _ := json.Marshal(doc)
	return b
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// pad32 left-pads a P-256 coordinate or scalar to 32 bytes.
func pad32(b []byte) []byte {
	if len(b) >= 32 {
		return b
	}
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}

// NewUUID returns a random version 4 UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewJWK creates a private JWK as "supabase gen signing-key"
// does: kid a UUID v4, use sig, key_ops sign and verify, ext true; ES256
// (P-256), RS256 (RSA 2048, with the CRT members) or EdDSA (OKP Ed25519,
// d the 32-byte seed of RFC 8037).
func NewJWK(alg string) (JWK, error) {
	k := JWK{Kid: NewUUID(), Use: "sig", KeyOps: []string{"sign", "verify"}, Alg: alg, Ext: true}
	switch alg {
	case ES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return JWK{}, fmt.Errorf("generate key: %w", err)
		}
		d, err := priv.Bytes()
		if err != nil {
			return JWK{}, fmt.Errorf("encode key: %w", err)
		}
		pubBytes, err := priv.PublicKey.Bytes() // 0x04 | X | Y
		if err != nil {
			return JWK{}, fmt.Errorf("encode key: %w", err)
		}
		k.Kty, k.Crv, k.X, k.Y, k.D = "EC", "P-256", b64(pubBytes[1:33]), b64(pubBytes[33:65]), b64(d)
	case RS256:
		priv, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return JWK{}, fmt.Errorf("generate key: %w", err)
		}
		priv.Precompute()
		k.Kty = "RSA"
		k.N, k.E, k.D = b64(priv.N.Bytes()), b64(big.NewInt(int64(priv.E)).Bytes()), b64(priv.D.Bytes())
		k.P, k.Q = b64(priv.Primes[0].Bytes()), b64(priv.Primes[1].Bytes())
		k.DP, k.DQ, k.QI = b64(priv.Precomputed.Dp.Bytes()), b64(priv.Precomputed.Dq.Bytes()), b64(priv.Precomputed.Qinv.Bytes())
	case EdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return JWK{}, fmt.Errorf("generate key: %w", err)
		}
		k.Kty, k.Crv, k.X, k.D = "OKP", "Ed25519", b64(pub), b64(priv.Seed())
	default:
		return JWK{}, fmt.Errorf("unsupported algorithm %q: want ES256, RS256 or EdDSA", alg)
	}
	return k, nil
}

// Parse parses the content of a signing keys file: a JSON array of private JWKs
// (the signing_keys_path format) or, as printed by "supabase gen
// signing-key" without a path, one JWK object.
func Parse(data []byte) (*Set, error) {
	data = []byte(strings.TrimSpace(string(data)))
	var list []JWK
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("not a JSON array of JWKs: %w", err)
		}
	case len(data) > 0 && data[0] == '{':
		var one JWK
		if err := json.Unmarshal(data, &one); err != nil {
			return nil, fmt.Errorf("not a JWK: %w", err)
		}
		list = []JWK{one}
	default:
		return nil, errors.New("expected a JSON array of private JWKs")
	}
	if len(list) == 0 {
		return nil, errors.New("the file holds no keys")
	}
	ks := &Set{}
	for i, k := range list {
		sk, err := parseJWK(k)
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err)
		}
		ks.Keys = append(ks.Keys, sk)
	}
	return ks, nil
}

// decB64 decodes a base64url member (padding tolerated) of at most max
// bytes (0: no bound).
func decB64(name, v string, max int) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil || len(b) == 0 || (max > 0 && len(b) > max) {
		return nil, fmt.Errorf("member %s is not a valid base64url value", name)
	}
	return b, nil
}

func parseJWK(k JWK) (Key, error) {
	var (
		sk  Key
		err error
	)
	switch {
	case k.Kty == "oct":
		return Key{}, errors.New("symmetric (HS256) keys cannot be published in a JWKS; create an asymmetric key with \"tablegate keys new\"")
	case k.Kty == "EC" && (k.Crv == "" || k.Crv == "P-256") && (k.Alg == "" || k.Alg == ES256):
		sk, err = parseECJWK(k)
	case k.Kty == "RSA" && (k.Alg == "" || k.Alg == RS256):
		sk, err = parseRSAJWK(k)
	case k.Kty == "OKP" && k.Crv == "Ed25519" && (k.Alg == "" || k.Alg == EdDSA):
		sk, err = parseEdJWK(k)
	default:
		return Key{}, fmt.Errorf("unsupported key type %s/%s/%s; want EC/P-256/ES256, RSA/RS256 or OKP/Ed25519/EdDSA", k.Kty, k.Crv, k.Alg)
	}
	if err != nil {
		return Key{}, err
	}
	if k.Kid == "" {
		return Key{}, errors.New("missing kid")
	}
	sk.Kid = k.Kid
	sk.Sign = len(k.KeyOps) == 0 || slices.Contains(k.KeyOps, "sign")
	return sk, nil
}

func parseECJWK(k JWK) (Key, error) {
	dec := func(name, v string) ([]byte, error) {
		b, err := decB64(name, v, 32)
		if err != nil {
			return nil, fmt.Errorf("member %s is not a base64url P-256 value", name)
		}
		// The Supabase CLI writes big.Int bytes without left padding.
		return pad32(b), nil
	}
	d, err := dec("d", k.D)
	if err != nil {
		return Key{}, fmt.Errorf("%w (a signing key needs its private part d)", err)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return Key{}, fmt.Errorf("invalid private key: %w", err)
	}
	if k.X != "" || k.Y != "" {
		x, err := dec("x", k.X)
		if err != nil {
			return Key{}, err
		}
		y, err := dec("y", k.Y)
		if err != nil {
			return Key{}, err
		}
		if priv.X.Cmp(new(big.Int).SetBytes(x)) != 0 || priv.Y.Cmp(new(big.Int).SetBytes(y)) != 0 {
			return Key{}, errors.New("x/y do not match the private key d")
		}
	}
	return Key{Alg: ES256, Private: priv}, nil
}

func parseRSAJWK(k JWK) (Key, error) {
	num := func(name, v string) (*big.Int, error) {
		b, err := decB64(name, v, 1024)
		if err != nil {
			return nil, err
		}
		return new(big.Int).SetBytes(b), nil
	}
	n, err := num("n", k.N)
	if err != nil {
		return Key{}, err
	}
	e, err := num("e", k.E)
	if err != nil {
		return Key{}, err
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return Key{}, errors.New("member e is not a usable RSA exponent")
	}
	d, err := num("d", k.D)
	if err != nil {
		return Key{}, fmt.Errorf("%w (a signing key needs its private part d)", err)
	}
	p, err := num("p", k.P)
	if err != nil {
		return Key{}, err
	}
	q, err := num("q", k.Q)
	if err != nil {
		return Key{}, err
	}
	priv := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: int(e.Int64())}, D: d, Primes: []*big.Int{p, q}}
	if n.BitLen() < 2048 {
		return Key{}, fmt.Errorf("RSA key of %d bits is too small (tablegate verifies RS256 keys of 2048 bits or more)", n.BitLen())
	}
	if err := priv.Validate(); err != nil {
		return Key{}, fmt.Errorf("invalid RSA key: %w", err)
	}
	priv.Precompute()
	return Key{Alg: RS256, Private: priv}, nil
}

func parseEdJWK(k JWK) (Key, error) {
	seed, err := decB64("d", k.D, 0)
	if err != nil || len(seed) != ed25519.SeedSize {
		return Key{}, errors.New("member d is not a 32-byte Ed25519 seed (a signing key needs its private part d)")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if k.X != "" {
		x, err := decB64("x", k.X, 0)
		if err != nil || !bytes.Equal(x, priv.Public().(ed25519.PublicKey)) {
			return Key{}, errors.New("x does not match the private key d")
		}
	}
	return Key{Alg: EdDSA, Private: priv}, nil
}

// Load reads and parses a signing keys file. Its errors name the file and
// say how to create one.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("signing keys file %s does not exist; create it with \"tablegate keys new --path %s\"", path, path)
		}
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	ks, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("signing keys file %s: %w", path, err)
	}
	return ks, nil
}

// WriteFile writes keys as a JSON array indented by two spaces with mode
// 0600 (what the Supabase CLI writes), atomically (see [WriteFileAtomic]).
func WriteFile(path string, keys []JWK) error {
	b, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// WriteFileAtomic writes data to a temporary file beside path (creating
// its directory) and renames it over path, so that a reader sees the old or
// the new content, never a part.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

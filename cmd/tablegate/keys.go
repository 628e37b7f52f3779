package main

import (
	"bytes"
	"context"
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

// jwk is one JSON Web Key in the shape the Supabase CLI writes to
// signing_keys_path (config.JWK): base64url values without padding.
type jwk struct {
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

// Signing algorithms "keys new --alg" creates and "token" signs with.
const (
	algES256 = "ES256"
	algRS256 = "RS256"
	algEdDSA = "EdDSA"
)

// signingKey is a parsed private key: ES256 (P-256), RS256 (RSA ≥ 2048
// bits) or EdDSA (Ed25519).
type signingKey struct {
	kid  string
	alg  string
	priv crypto.Signer
	sign bool // key_ops contains "sign" (or key_ops absent)
}

// method returns the golang-jwt signing method of the key.
func (k signingKey) method() jwt.SigningMethod {
	switch k.alg {
	case algRS256:
		return jwt.SigningMethodRS256
	case algEdDSA:
		return jwt.SigningMethodEdDSA
	}
	return jwt.SigningMethodES256
}

// keySet is the content of a signing keys file.
type keySet struct {
	keys []signingKey
}

// signer returns the key that signs: the first with key_ops "sign".
func (ks *keySet) signer() (signingKey, error) {
	for _, k := range ks.keys {
		if k.sign {
			return k, nil
		}
	}
	return signingKey{}, errors.New("no key with key_ops [\"sign\"] in the signing keys file")
}

// publicKey returns the public key named by a token's kid (for servers
// that verify their own tokens, like the demo's logout).
func (ks *keySet) publicKey(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	for _, k := range ks.keys {
		if k.kid == kid && k.method().Alg() == t.Method.Alg() {
			return k.priv.Public(), nil
		}
	}
	return nil, errors.New("unknown kid")
}

// publicJWKS returns the public JWKS document ({"keys":[...]}) in the shape
// GoTrue serves at /auth/v1/.well-known/jwks.json.
func (ks *keySet) publicJWKS() []byte {
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
	for _, k := range ks.keys {
		p := pub{Alg: k.alg, Ext: true, KeyOps: []string{"verify"}, Kid: k.kid, Use: "sig"}
		switch priv := k.priv.(type) {
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

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newSigningJWK creates a private ES256 JWK (see [newSigningJWKFor]).
func newSigningJWK() (jwk, error) { return newSigningJWKFor(algES256) }

// newSigningJWKFor creates a private JWK as "supabase gen signing-key"
// does: kid a UUID v4, use sig, key_ops sign and verify, ext true; ES256
// (P-256), RS256 (RSA 2048, with the CRT members) or EdDSA (OKP Ed25519,
// d the 32-byte seed of RFC 8037).
func newSigningJWKFor(alg string) (jwk, error) {
	k := jwk{Kid: newUUID(), Use: "sig", KeyOps: []string{"sign", "verify"}, Alg: alg, Ext: true}
	switch alg {
	case algES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return jwk{}, fmt.Errorf("generate key: %w", err)
		}
		d, err := priv.Bytes()
		if err != nil {
			return jwk{}, fmt.Errorf("encode key: %w", err)
		}
		pubBytes, err := priv.PublicKey.Bytes() // 0x04 | X | Y
		if err != nil {
			return jwk{}, fmt.Errorf("encode key: %w", err)
		}
		k.Kty, k.Crv, k.X, k.Y, k.D = "EC", "P-256", b64(pubBytes[1:33]), b64(pubBytes[33:65]), b64(d)
	case algRS256:
		priv, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return jwk{}, fmt.Errorf("generate key: %w", err)
		}
		priv.Precompute()
		k.Kty = "RSA"
		k.N, k.E, k.D = b64(priv.N.Bytes()), b64(big.NewInt(int64(priv.E)).Bytes()), b64(priv.D.Bytes())
		k.P, k.Q = b64(priv.Primes[0].Bytes()), b64(priv.Primes[1].Bytes())
		k.DP, k.DQ, k.QI = b64(priv.Precomputed.Dp.Bytes()), b64(priv.Precomputed.Dq.Bytes()), b64(priv.Precomputed.Qinv.Bytes())
	case algEdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return jwk{}, fmt.Errorf("generate key: %w", err)
		}
		k.Kty, k.Crv, k.X, k.D = "OKP", "Ed25519", b64(pub), b64(priv.Seed())
	default:
		return jwk{}, fmt.Errorf("unsupported algorithm %q: want ES256, RS256 or EdDSA", alg)
	}
	return k, nil
}

// parseKeyFile parses a signing keys file: a JSON array of private JWKs
// (the signing_keys_path format) or, as printed by "supabase gen
// signing-key" without a path, one JWK object.
func parseKeyFile(data []byte) (*keySet, error) {
	data = []byte(strings.TrimSpace(string(data)))
	var list []jwk
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("not a JSON array of JWKs: %w", err)
		}
	case len(data) > 0 && data[0] == '{':
		var one jwk
		if err := json.Unmarshal(data, &one); err != nil {
			return nil, fmt.Errorf("not a JWK: %w", err)
		}
		list = []jwk{one}
	default:
		return nil, errors.New("expected a JSON array of private JWKs")
	}
	if len(list) == 0 {
		return nil, errors.New("the file holds no keys")
	}
	ks := &keySet{}
	for i, k := range list {
		sk, err := parseJWK(k)
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err)
		}
		ks.keys = append(ks.keys, sk)
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

func parseJWK(k jwk) (signingKey, error) {
	var (
		sk  signingKey
		err error
	)
	switch {
	case k.Kty == "oct":
		return signingKey{}, errors.New("symmetric (HS256) keys cannot be published in a JWKS; create an asymmetric key with \"tablegate keys new\"")
	case k.Kty == "EC" && (k.Crv == "" || k.Crv == "P-256") && (k.Alg == "" || k.Alg == algES256):
		sk, err = parseECJWK(k)
	case k.Kty == "RSA" && (k.Alg == "" || k.Alg == algRS256):
		sk, err = parseRSAJWK(k)
	case k.Kty == "OKP" && k.Crv == "Ed25519" && (k.Alg == "" || k.Alg == algEdDSA):
		sk, err = parseEdJWK(k)
	default:
		return signingKey{}, fmt.Errorf("unsupported key type %s/%s/%s; want EC/P-256/ES256, RSA/RS256 or OKP/Ed25519/EdDSA", k.Kty, k.Crv, k.Alg)
	}
	if err != nil {
		return signingKey{}, err
	}
	if k.Kid == "" {
		return signingKey{}, errors.New("missing kid")
	}
	sk.kid = k.Kid
	sk.sign = len(k.KeyOps) == 0 || slices.Contains(k.KeyOps, "sign")
	return sk, nil
}

func parseECJWK(k jwk) (signingKey, error) {
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
		return signingKey{}, fmt.Errorf("%w (a signing key needs its private part d)", err)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return signingKey{}, fmt.Errorf("invalid private key: %w", err)
	}
	if k.X != "" || k.Y != "" {
		x, err := dec("x", k.X)
		if err != nil {
			return signingKey{}, err
		}
		y, err := dec("y", k.Y)
		if err != nil {
			return signingKey{}, err
		}
		if priv.X.Cmp(new(big.Int).SetBytes(x)) != 0 || priv.Y.Cmp(new(big.Int).SetBytes(y)) != 0 {
			return signingKey{}, errors.New("x/y do not match the private key d")
		}
	}
	return signingKey{alg: algES256, priv: priv}, nil
}

func parseRSAJWK(k jwk) (signingKey, error) {
	num := func(name, v string) (*big.Int, error) {
		b, err := decB64(name, v, 1024)
		if err != nil {
			return nil, err
		}
		return new(big.Int).SetBytes(b), nil
	}
	n, err := num("n", k.N)
	if err != nil {
		return signingKey{}, err
	}
	e, err := num("e", k.E)
	if err != nil {
		return signingKey{}, err
	}
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return signingKey{}, errors.New("member e is not a usable RSA exponent")
	}
	d, err := num("d", k.D)
	if err != nil {
		return signingKey{}, fmt.Errorf("%w (a signing key needs its private part d)", err)
	}
	p, err := num("p", k.P)
	if err != nil {
		return signingKey{}, err
	}
	q, err := num("q", k.Q)
	if err != nil {
		return signingKey{}, err
	}
	priv := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: int(e.Int64())}, D: d, Primes: []*big.Int{p, q}}
	if n.BitLen() < 2048 {
		return signingKey{}, fmt.Errorf("RSA key of %d bits is too small (tablegate verifies RS256 keys of 2048 bits or more)", n.BitLen())
	}
	if err := priv.Validate(); err != nil {
		return signingKey{}, fmt.Errorf("invalid RSA key: %w", err)
	}
	priv.Precompute()
	return signingKey{alg: algRS256, priv: priv}, nil
}

func parseEdJWK(k jwk) (signingKey, error) {
	seed, err := decB64("d", k.D, 0)
	if err != nil || len(seed) != ed25519.SeedSize {
		return signingKey{}, errors.New("member d is not a 32-byte Ed25519 seed (a signing key needs its private part d)")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	if k.X != "" {
		x, err := decB64("x", k.X, 0)
		if err != nil || !bytes.Equal(x, priv.Public().(ed25519.PublicKey)) {
			return signingKey{}, errors.New("x does not match the private key d")
		}
	}
	return signingKey{alg: algEdDSA, priv: priv}, nil
}

// loadKeyFile reads and parses a signing keys file.
func loadKeyFile(path string) (*keySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("signing keys file %s does not exist; create it with \"tablegate keys new --path %s\"", path, path)
		}
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	ks, err := parseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("signing keys file %s: %w", path, err)
	}
	return ks, nil
}

// writeKeyFile writes keys as a JSON array indented by two spaces with mode
// 0600 (what the Supabase CLI writes), atomically.
func writeKeyFile(path string, keys []jwk) error {
	b, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), 0o600)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so that a reader sees the old or the new content, never a
// part.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
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

const keysUsage = `Usage:
  tablegate keys new [--alg ES256|RS256|EdDSA] [--path FILE] [--append] [--force]
  tablegate keys jwks [--signing-keys FILE]

"keys new" creates a signing key (ES256 by default, the Supabase
recommendation; RS256 or EdDSA with --alg) in the format of the Supabase CLI's
[auth] signing_keys_path (a JSON array of private JWKs, mode 0600; the same
file "supabase gen signing-key" writes) and prints the public JWKS that
/auth/v1/.well-known/jwks.json serves for it. Point GoTrue or the Supabase
CLI at the file (config.toml: [auth] signing_keys_path = "./signing_keys.json")
so that tokens they issue verify with tablegate, or use it with
"tablegate token" and "tablegate demo --signing-keys".

"keys jwks" prints the public JWKS of an existing file.
`

func runKeys(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, keysUsage)
		return usagef("missing subcommand: new or jwks")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, keysUsage)
		return nil
	case "new":
		return runKeysNew(e, args[1:])
	case "jwks":
		return runKeysJWKS(e, args[1:])
	}
	return usagef("unknown subcommand %q: want new or jwks", args[0])
}

func runKeysNew(e *env, args []string) error {
	fs := newFlagSet(e, "keys new", keysUsage)
	path := fs.String("path", signingKeysDefault(defaultSupabaseConfig), "signing keys `file` to write ([auth] signing_keys_path of "+defaultSupabaseConfig+" when it sets one)")
	appendKey := fs.Bool("append", false, "add a key to an existing file; the new key signs, older keys only verify")
	force := fs.Bool("force", false, "overwrite an existing file")
	alg := fs.String("alg", algES256, "signing `algorithm`: ES256, RS256 or EdDSA (Ed25519)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	switch *alg {
	case algES256, algRS256, algEdDSA:
	default:
		return usagef("--alg must be ES256, RS256 or EdDSA, got %q", *alg)
	}
	k, err := newSigningJWKFor(*alg)
	if err != nil {
		return err
	}
	keys := []jwk{k}
	if old, err := os.ReadFile(*path); err == nil {
		switch {
		case *appendKey:
			var prev []jwk
			if err := json.Unmarshal(old, &prev); err != nil {
				return fmt.Errorf("%s is not a JSON array of JWKs; refusing to append: %w", *path, err)
			}
			for i := range prev {
				prev[i].KeyOps = []string{"verify"}
			}
			keys = append(keys, prev...)
		case !*force:
			return fmt.Errorf("%s already exists; use --append to add a key (rotation) or --force to replace it", *path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", *path, err)
	}
	if err := writeKeyFile(*path, keys); err != nil {
		return err
	}
	ks, err := loadKeyFile(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "✓ wrote %d key(s) to %s (mode 0600); signing kid %s (%s)\n", len(keys), *path, k.Kid, k.Alg)
	fmt.Fprintf(e.stderr, "  public JWKS (serve at /auth/v1/.well-known/jwks.json):\n")
	fmt.Fprintf(e.stdout, "%s\n", indentJSON(ks.publicJWKS()))
	return nil
}

func runKeysJWKS(e *env, args []string) error {
	fs := newFlagSet(e, "keys jwks", keysUsage)
	path := fs.String("signing-keys", signingKeysDefault(defaultSupabaseConfig), "signing keys `file` to read ([auth] signing_keys_path of "+defaultSupabaseConfig+" when it sets one)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	ks, err := loadKeyFile(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", indentJSON(ks.publicJWKS()))
	return nil
}

func indentJSON(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return out
}

package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

const tokenUsage = `Usage:
  tablegate token [--sub UUID] [--anonymous] [--role ROLE] [--tenant UUID]
                  [--roles a,b] [--ttl 1h] [--iss URL] [--email ADDR]
                  [--signing-keys FILE]

Mints a development access token shaped like a GoTrue (Supabase Auth) token,
signed with the signing key of FILE (ES256, RS256 or EdDSA, whichever
"keys new --alg" created; kid in the header), and prints it.
The claims are iss, sub, aud "authenticated", exp, iat, email, phone,
app_metadata, user_metadata, role, aal, amr, session_id and is_anonymous, plus
tenant_id (--tenant) and roles (--roles) when given. iss defaults to the
issuer serve checks in the same environment ($SUPABASE_JWT_ISSUER, else
$SUPABASE_URL/auth/v1, else the Supabase CLI's http://127.0.0.1:54321/auth/v1),
and FILE to $SIGNING_KEYS_PATH, else the [auth] signing_keys_path of
supabase/config.toml. After ". FILE" of "tablegate demo --print-env FILE"
both name the demo's, so the tokens minted are ones the demo accepts.

Example, next to a demo started with --print-env /tmp/demo.env:
  . /tmp/demo.env
  curl -s "$BASE_URL/whoami" -H "Authorization: Bearer $(tablegate token --tenant "$TENANT_A" --roles admin --signing-keys "$SIGNING_KEYS_PATH" --iss "$BASE_URL/auth/v1")"
`

func runToken(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "token", tokenUsage)
	var s tokenSpec
	fs.StringVar(&s.Sub, "sub", "", "user id (`uuid`); default a random one")
	fs.BoolVar(&s.Anonymous, "anonymous", false, "mark the token as an anonymous sign-in (is_anonymous true)")
	fs.StringVar(&s.Role, "role", "authenticated", "database `role` claim")
	fs.StringVar(&s.Tenant, "tenant", "", "tenant_id claim (`uuid`)")
	roles := fs.String("roles", "", "comma-separated application `roles` claim, e.g. admin,approver")
	fs.DurationVar(&s.TTL, "ttl", time.Hour, "lifetime")
	fs.StringVar(&s.Issuer, "iss", "", "issuer `URL` (iss claim); default $SUPABASE_JWT_ISSUER, else $SUPABASE_URL/auth/v1, else "+defaultIssuer)
	fs.StringVar(&s.Email, "email", "", "email claim")
	keysDefault := strings.TrimSpace(e.getenv("SIGNING_KEYS_PATH"))
	if keysDefault == "" {
		keysDefault = signingKeysDefault(defaultSupabaseConfig)
	}
	path := fs.String("signing-keys", keysDefault, "signing keys `file` (create with \"tablegate keys new\"; default $SIGNING_KEYS_PATH, else [auth] signing_keys_path of "+defaultSupabaseConfig+" when it sets one)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if s.TTL <= 0 {
		return usagef("--ttl must be positive, got %s", s.TTL)
	}
	if s.Issuer == "" {
		s.Issuer = tokenIssuer(e.getenv)
	}
	if s.Sub != "" && !isUUID(s.Sub) {
		return usagef("--sub must be a UUID (auth.uid() casts it to uuid)")
	}
	if s.Tenant != "" && !isUUID(s.Tenant) {
		return usagef("--tenant must be a UUID (tablegate.current_tenant_id() ignores anything else)")
	}
	for _, r := range strings.Split(*roles, ",") {
		if r = strings.TrimSpace(r); r != "" {
			s.Roles = append(s.Roles, r)
		}
	}
	ks, err := loadKeyFile(*path)
	if err != nil {
		return err
	}
	tok, err := mintToken(ks, s, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, tok)
	return nil
}

// tokenIssuer is the iss of minted tokens without --iss: the issuer that
// serve and authctx.LoadEnv require in the same environment
// (SUPABASE_JWT_ISSUER, else {SUPABASE_URL}/auth/v1), else the Supabase
// CLI's local auth URL.
func tokenIssuer(getenv func(string) string) string {
	if iss := strings.TrimSpace(getenv("SUPABASE_JWT_ISSUER")); iss != "" && iss != "*" {
		return iss
	}
	if u := strings.TrimSpace(getenv("SUPABASE_URL")); u != "" {
		return strings.TrimRight(u, "/") + "/auth/v1"
	}
	return defaultIssuer
}

// isUUID reports whether s has the 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/tablegate/tablegate/internal/doctor"
	"github.com/tablegate/tablegate/rest"
)

const doctorUsage = `Usage:
  tablegate doctor [--database-url URL] [--signing-keys FILE]
                   [--auth-url URL | --jwks-url URL] [--config FILE]
                   [--table [schema.]name ...] [--supabase-config FILE] [--strict]

Checks a tablegate setup and prints a checklist:

  ✓ signing keys present and usable (a warning when missing)
  ✓ JWKS reachable and asymmetric (a warning for HS256-only projects)
  ✓ database reachable, tablegate migrations current
  ✓ every served table (--config, --table) has RLS enabled and forced
  ✓ anon/authenticated grants sane (no TRUNCATE: RLS does not apply to it)
  ✓ write policies exclude anonymous sign-ins
  ✓ policies evaluate their helpers once per statement, not once per row
  ✓ the tenant claim setting matches what functions and policies read
  ✓ refresh-token reuse interval (advice)

The database comes from --database-url, else DATABASE_URL; the JWKS from
--jwks-url, else the config's auth.jwks_url, else SUPABASE_JWKS_URL, else the
inline SUPABASE_JWKS (nothing fetched), else {--auth-url or the config's
auth.url or SUPABASE_URL}/auth/v1/.well-known/jwks.json.

Exit code 1 when a check fails (with --strict also on a warning), else 0.
`

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "doctor", doctorUsage)
	o := doctor.Options{Getenv: e.getenv, Connect: connect}
	var databaseFlag, configPath string
	fs.StringVar(&databaseFlag, "database-url", "", "Postgres `URL` (default $DATABASE_URL)")
	fs.StringVar(&o.SigningKeys, "signing-keys", "", "signing keys `file` (default: [auth] signing_keys_path of --supabase-config when it sets one, else signing_keys.json beside it)")
	fs.StringVar(&o.AuthURL, "auth-url", "", "Supabase project `URL` (default $SUPABASE_URL)")
	fs.StringVar(&o.JWKSURL, "jwks-url", "", "JWKS `URL` (overrides --auth-url)")
	fs.StringVar(&configPath, "config", "", "serve config `file` whose tables to check")
	fs.Func("table", "a served table `[schema.]name` to check (repeatable)", func(s string) error {
		if !tableName.MatchString(s) {
			return fmt.Errorf("%q is not a [schema.]table name", s)
		}
		o.Tables = append(o.Tables, s)
		return nil
	})
	fs.StringVar(&o.SupabaseConfig, "supabase-config", defaultSupabaseConfig, "Supabase CLI config `file` read for signing_keys_path and the refresh-token settings")
	strict := fs.Bool("strict", false, "fail on warnings too")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.SigningKeys == "" {
		o.SigningKeys = signingKeysDefault(o.SupabaseConfig)
	}
	cfgURL := ""
	if configPath != "" {
		cfg := doctorConfig(&o, configPath)
		cfgURL = cfg.DatabaseURL
	}
	if u, err := databaseURL(o.Getenv, databaseFlag, cfgURL); err == nil {
		o.DatabaseURL = u
	}
	sa, err := readSupabaseConfig(o.SupabaseConfig)
	if o.SupabaseErr = err; sa != nil {
		o.Supabase = &doctor.SupabaseAuth{RefreshTokenReuseInterval: sa.RefreshTokenReuseInterval,
			EnableRefreshTokenRotation: sa.EnableRefreshTokenRotation, Bad: sa.bad}
		o.Supabase.SigningKeysPath, _ = sa.signingKeysPath(o.SupabaseConfig)
	}
	if doctor.Print(e.stdout, doctor.Run(ctx, o), *strict) {
		return errReported
	}
	return nil
}

// doctorConfig loads the serve config at path into o: what the checks need
// of it, and its tables after those of --table. It returns the config
// (empty when it cannot be loaded: o.Config says why).
func doctorConfig(o *doctor.Options, path string) *serveConfig {
	c, err := loadServeConfig(path)
	if err != nil {
		o.Config = &doctor.Config{Path: path, Err: err}
		return &serveConfig{}
	}
	o.Config = &doctor.Config{Path: path, Routes: len(c.Tables), JWKSURL: c.Auth.JWKSURL, AuthURL: c.Auth.URL}
	for _, n := range c.TableNames() {
		for _, op := range crudOps {
			if key, ok := c.Tables[n].Permissions[op]; ok && len(c.Permissions[key]) == 0 {
				o.Config.Orphans = append(o.Config.Orphans, fmt.Sprintf("tables.%s.permissions.%s = %q", n, op, key))
			}
		}
	}
	o.Served = map[string]*doctor.Served{}
	for _, n := range c.TableNames() {
		t := c.Tables[n]
		if !slices.Contains(o.Tables, t.Table) {
			o.Tables = append(o.Tables, t.Table)
		}
		s := o.Served[t.Table]
		if s == nil {
			s = &doctor.Served{}
			o.Served[t.Table] = s
		}
		s.AllowWithoutRLS = s.AllowWithoutRLS || t.AllowWithoutRLS
		for _, op := range t.Operations {
			if !slices.Contains(s.Ops, rest.Operation(op)) {
				s.Ops = append(s.Ops, rest.Operation(op))
			}
		}
		for _, r := range t.GrantRoles() {
			if !slices.Contains(s.Roles, r) {
				s.Roles = append(s.Roles, r)
			}
		}
	}
	return c
}

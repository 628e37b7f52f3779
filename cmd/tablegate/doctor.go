package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
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

type checkStatus int

const (
	statusOK checkStatus = iota
	statusInfo
	statusSkip
	statusWarn
	statusFail
)

func (s checkStatus) mark() string {
	return [...]string{"✓", "i", "-", "!", "✗"}[s]
}

// check is one line of the doctor's checklist.
type check struct {
	status checkStatus
	name   string
	detail string
	fix    string
}

type doctorOptions struct {
	databaseURL    string
	signingKeys    string
	authURL        string
	jwksURL        string
	configPath     string
	tables         []string
	supabaseConfig string
	strict         bool
	// served holds what the config serves of each table (by table name).
	served     map[string]*servedTable
	getenv     func(string) string
	httpClient *http.Client
}

func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "doctor", doctorUsage)
	o := doctorOptions{getenv: e.getenv}
	fs.StringVar(&o.databaseURL, "database-url", "", "Postgres `URL` (default $DATABASE_URL)")
	fs.StringVar(&o.signingKeys, "signing-keys", "", "signing keys `file` (default: [auth] signing_keys_path of --supabase-config when it sets one, else signing_keys.json beside it)")
	fs.StringVar(&o.authURL, "auth-url", "", "Supabase project `URL` (default $SUPABASE_URL)")
	fs.StringVar(&o.jwksURL, "jwks-url", "", "JWKS `URL` (overrides --auth-url)")
	fs.StringVar(&o.configPath, "config", "", "serve config `file` whose tables to check")
	fs.Func("table", "a served table `[schema.]name` to check (repeatable)", func(s string) error {
		if !tableName.MatchString(s) {
			return fmt.Errorf("%q is not a [schema.]table name", s)
		}
		o.tables = append(o.tables, s)
		return nil
	})
	fs.StringVar(&o.supabaseConfig, "supabase-config", defaultSupabaseConfig, "Supabase CLI config `file` read for signing_keys_path and the refresh-token settings")
	fs.BoolVar(&o.strict, "strict", false, "fail on warnings too")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.signingKeys == "" {
		o.signingKeys = signingKeysDefault(o.supabaseConfig)
	}
	checks := doctor(ctx, o)
	failed := printChecks(e.stdout, checks, o.strict)
	if failed {
		return errReported
	}
	return nil
}

// printable escapes control characters (a newline, a terminal escape) in
// s, which may hold names the database returned: a policy named
// "x\n✓ all good" must not print a line of its own. A line break followed
// by indentation, as errors that list several attempts are laid out
// ("…:\n\tA\n\tB"), becomes "; " instead of a literal \n\t.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '\n' && i+1 < len(rs) && (rs[i+1] == '\t' || rs[i+1] == ' ') {
			for i+1 < len(rs) && (rs[i+1] == '\t' || rs[i+1] == ' ') {
				i++
			}
			if t := strings.TrimRight(b.String(), " :"); t != b.String() {
				b.Reset()
				b.WriteString(t)
			}
			if b.Len() > 0 && i+1 < len(rs) {
				b.WriteString("; ")
			}
			continue
		}
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// printChecks writes the checklist and reports whether it failed.
func printChecks(w io.Writer, checks []check, strict bool) bool {
	var nFail, nWarn int
	for _, c := range checks {
		fmt.Fprintf(w, "%s %s", c.status.mark(), printable(c.name))
		if c.detail != "" {
			fmt.Fprintf(w, ": %s", printable(c.detail))
		}
		fmt.Fprintln(w)
		if c.fix != "" && c.status >= statusWarn {
			fmt.Fprintf(w, "    → %s\n", printable(c.fix))
		}
		switch c.status {
		case statusFail:
			nFail++
		case statusWarn:
			nWarn++
		}
	}
	fmt.Fprintf(w, "\n%d failed, %d warning(s)\n", nFail, nWarn)
	return nFail > 0 || (strict && nWarn > 0)
}

// doctor runs every check in order.
func doctor(ctx context.Context, o doctorOptions) []check {
	var out []check
	add := func(c ...check) { out = append(out, c...) }

	var cfg *serveConfig
	if o.configPath != "" {
		c, err := loadServeConfig(o.configPath)
		if err != nil {
			add(check{statusFail, "config", err.Error(), "fix the config file (see tablegate serve --help)"})
		} else {
			cfg = c
			add(check{statusOK, "config", fmt.Sprintf("%s: %d table(s)", o.configPath, len(c.Tables)), ""})
			var orphans []string
			for _, n := range c.tableNames() {
				for _, op := range crudOps {
					if key, ok := c.Tables[n].Permissions[op]; ok && len(c.Permissions[key]) == 0 {
						orphans = append(orphans, fmt.Sprintf("tables.%s.permissions.%s = %q", n, op, key))
					}
				}
			}
			if len(orphans) > 0 {
				add(check{statusWarn, "permissions", "granted to nobody: " + strings.Join(orphans, "; "),
					`list the roles that hold each key in "permissions" ({"todos.delete": ["admin"]}); until then every caller gets 403 PERMISSION_DENIED`})
			}
			o.served = map[string]*servedTable{}
			for _, n := range c.tableNames() {
				t := c.Tables[n]
				if !slices.Contains(o.tables, t.Table) {
					o.tables = append(o.tables, t.Table)
				}
				o.served[t.Table] = o.served[t.Table].add(t)
			}
		}
	}

	ks, keysCheck := checkSigningKeys(o)
	add(keysCheck)
	add(checkJWKS(ctx, o, cfg, ks))

	cfgURL := ""
	if cfg != nil {
		cfgURL = cfg.DatabaseURL
	}
	if dbURL, err := databaseURL(o.getenv, o.databaseURL, cfgURL); err != nil {
		add(check{statusFail, "database", "no database URL", "pass --database-url or set DATABASE_URL"})
	} else if pool, err := connect(ctx, dbURL); err != nil {
		var ce *db.ConnectError
		if errors.As(err, &ce) {
			add(check{statusFail, "database", ce.Problem, ce.Fix})
		} else {
			add(check{statusFail, "database", err.Error(), "start Postgres or fix the URL"})
		}
	} else {
		defer pool.Close()
		var version string
		_ = pool.QueryRow(ctx, "show server_version").Scan(&version)
		add(check{statusOK, "database", "reachable, PostgreSQL " + version, ""})
		add(checkMigrations(ctx, pool))
		add(checkTables(ctx, pool, o.tables, o.served)...)
		add(checkAnonWrites(ctx, pool, o.tables))
		add(checkPerRowHelpers(ctx, pool, o.tables))
		add(checkTenantClaim(ctx, pool))
		add(checkTenantMembers(ctx, pool)...)
	}
	add(checkReuseInterval(o))
	return out
}

// checkSigningKeys checks the signing keys file and, when the Supabase
// CLI's config.toml exists, that its [auth] signing_keys_path names it:
// without that setting the local auth server signs HS256 tokens, which
// tablegate cannot verify with a JWKS.
func checkSigningKeys(o doctorOptions) (*keySet, check) {
	const name = "signing keys"
	sa, cerr := readSupabaseConfig(o.supabaseConfig)
	configured, set := sa.signingKeysPath(o.supabaseConfig)
	same := set && samePath(configured, o.signingKeys)
	var configProblem string
	switch {
	case cerr != nil:
		configProblem = "cannot read " + o.supabaseConfig + " (" + cerr.Error() + "), so its [auth] signing_keys_path is unknown"
	case sa != nil && sa.bad["signing_keys_path"] != "":
		configProblem = sa.bad["signing_keys_path"]
	}
	if _, err := os.Stat(o.signingKeys); errors.Is(err, os.ErrNotExist) {
		switch {
		case same:
			return nil, check{statusWarn, name, "no signing keys file at " + o.signingKeys + " ([auth] signing_keys_path of " + o.supabaseConfig + ")",
				"create it with \"tablegate keys new\" (it writes there); until then the local auth server cannot sign tokens"}
		case set:
			return nil, check{statusWarn, name, "no signing keys file at " + o.signingKeys + "; the local auth server signs with " + configured + " ([auth] signing_keys_path of " + o.supabaseConfig + ")",
				"use --signing-keys " + configured + ", or create this file with \"tablegate keys new --path " + o.signingKeys + "\" and point signing_keys_path at it"}
		}
		return nil, check{statusWarn, name, "no signing keys file at " + o.signingKeys,
			"create one with \"tablegate keys new --path " + o.signingKeys + "\" and set [auth] signing_keys_path in " + o.supabaseConfig + "; without it local tokens are HS256 and cannot be verified with a JWKS"}
	}
	ks, err := loadKeyFile(o.signingKeys)
	if err != nil {
		return nil, check{statusFail, name, err.Error(), "recreate the file with \"tablegate keys new --force --path " + o.signingKeys + "\""}
	}
	s, err := ks.Signer()
	if err != nil {
		return ks, check{statusFail, name, err.Error(), "one key needs key_ops [\"sign\",\"verify\"]"}
	}
	detail := fmt.Sprintf("%s: %d key(s), signing kid %s (%s)", o.signingKeys, len(ks.Keys), s.Kid, s.Alg)
	switch {
	case configProblem != "":
		return ks, check{statusWarn, name, detail + "; but " + configProblem,
			"fix " + o.supabaseConfig + ": [auth] signing_keys_path = \"" + relativeToConfig(o.supabaseConfig, o.signingKeys) + "\""}
	case sa == nil: // no Supabase CLI project: nothing to compare with
	case !set:
		return ks, check{statusWarn, name, detail + "; but " + o.supabaseConfig + " sets no [auth] signing_keys_path, so the local auth server signs HS256 tokens tablegate cannot verify",
			"add signing_keys_path = \"" + relativeToConfig(o.supabaseConfig, o.signingKeys) + "\" under [auth] in " + o.supabaseConfig + " and restart it (supabase stop && supabase start)"}
	case !same:
		return ks, check{statusWarn, name, detail + "; but the local auth server signs with " + configured + " ([auth] signing_keys_path of " + o.supabaseConfig + ")",
			"use --signing-keys " + configured + ", or point signing_keys_path at this file"}
	}
	return ks, check{statusOK, name, detail, ""}
}

// samePath reports whether a and b name the same file path (after making
// both absolute; the file need not exist).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return aa == bb
}

// relativeToConfig spells path as a signing_keys_path relative to the
// directory of the config.toml at configPath ("./signing_keys.json").
func relativeToConfig(configPath, path string) string {
	rel, err := filepath.Rel(filepath.Dir(configPath), path)
	if err != nil {
		return path
	}
	if !strings.HasPrefix(rel, "..") {
		rel = "./" + filepath.ToSlash(rel)
	}
	return rel
}

func checkJWKS(ctx context.Context, o doctorOptions, cfg *serveConfig, ks *keySet) check {
	const name = "JWKS"
	// Flags first, then the order serve and authctx use: an explicit JWKS
	// URL, then the inline SUPABASE_JWKS (nothing fetched), then the
	// project URL.
	u := o.jwksURL
	if u == "" && o.authURL != "" {
		u = strings.TrimRight(o.authURL, "/") + "/auth/v1/.well-known/jwks.json"
	}
	if u == "" && cfg != nil {
		u = cfg.Auth.JWKSURL
	}
	if u == "" {
		u = strings.TrimSpace(o.getenv("SUPABASE_JWKS_URL"))
	}
	if u == "" {
		if raw := strings.TrimSpace(o.getenv("SUPABASE_JWKS")); raw != "" {
			return jwksVerdict("SUPABASE_JWKS (inline)", []byte(raw), ks)
		}
		base := ""
		if cfg != nil {
			base = cfg.Auth.URL
		}
		if base == "" {
			base = o.getenv("SUPABASE_URL")
		}
		if base != "" {
			u = strings.TrimRight(base, "/") + "/auth/v1/.well-known/jwks.json"
		}
	}
	if u == "" {
		return check{statusSkip, name, "no --auth-url, --jwks-url, SUPABASE_URL, SUPABASE_JWKS_URL or SUPABASE_JWKS", ""}
	}
	client := o.httpClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return check{statusFail, name, "invalid JWKS URL", "pass a full http(s) URL"}
	}
	resp, err := client.Do(req)
	if req.URL.User != nil {
		u = req.URL.Redacted() // a password in the URL is not printed
	}
	if err != nil {
		return check{statusFail, name, fmt.Sprintf("%s unreachable: %v", u, err), "start the auth server (supabase start) or fix --auth-url"}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return check{statusFail, name, fmt.Sprintf("%s answered %d", u, resp.StatusCode), "check the URL: it should end in /auth/v1/.well-known/jwks.json"}
	}
	return jwksVerdict(u, body, ks)
}

// jwksVerdict checks a JWK Set document (fetched from src, or inline) for
// asymmetric keys and for the local signing kid.
func jwksVerdict(src string, body []byte, ks *keySet) check {
	const name = "JWKS"
	type jwk struct {
		Kty string `json:"kty"`
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		// SUPABASE_JWKS may also be a bare array of keys.
		if err := json.Unmarshal(body, &doc.Keys); err != nil {
			return check{statusFail, name, src + " is not a JWKS document", "check the URL, or that SUPABASE_JWKS holds {\"keys\":[...]}"}
		}
	}
	var algs, kids []string
	for _, k := range doc.Keys {
		if k.Kty == "EC" || k.Kty == "RSA" || k.Kty == "OKP" {
			alg := k.Alg
			if alg == "" {
				alg = k.Kty
			}
			algs = append(algs, alg)
			kids = append(kids, k.Kid)
		}
	}
	if len(algs) == 0 {
		return check{statusWarn, name, src + " lists no asymmetric key (legacy HS256 secret only)",
			"enable asymmetric JWT signing keys (ES256) in the Supabase dashboard, or set [auth] signing_keys_path locally; tablegate verifies only asymmetric tokens"}
	}
	if ks != nil {
		s, err := ks.Signer()
		if err == nil && !slices.Contains(kids, s.Kid) {
			return check{statusWarn, name, fmt.Sprintf("%s holds %s keys but does not list the local signing kid %s", src, strings.Join(algs, ", "), s.Kid),
				"point the auth server at the same signing keys file, or mint tokens with its keys"}
		}
	}
	return check{statusOK, name, fmt.Sprintf("%s: %d asymmetric key(s) (%s)", src, len(algs), strings.Join(algs, ", ")), ""}
}

func checkMigrations(ctx context.Context, pool *pgxpool.Pool) check {
	const name = "migrations"
	p, err := db.NewMigrator(pool)
	if err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	defer p.Close()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return check{statusFail, name, err.Error(), "run \"tablegate migrate up\""}
	}
	if cur < target {
		return check{statusFail, name, fmt.Sprintf("version %d, %d available", cur, target), "run \"tablegate migrate up\""}
	}
	if cur > target {
		return check{statusWarn, name, fmt.Sprintf("version %d, newer than this build's newest (%d)", cur, target),
			"use the tablegate build that migrated this database (this one may not know its schema)"}
	}
	return check{statusOK, name, fmt.Sprintf("current (version %d)", cur), ""}
}

// servedTable is what a serve config serves of one table, over all the
// routes naming it.
type servedTable struct {
	allowWithoutRLS bool
	ops             []rest.Operation
	roles           []string
}

// add merges the route t into s (nil: none yet).
func (s *servedTable) add(t *tableConfig) *servedTable {
	if s == nil {
		s = &servedTable{}
	}
	s.allowWithoutRLS = s.allowWithoutRLS || t.AllowWithoutRLS
	for _, op := range t.Operations {
		if !slices.Contains(s.ops, rest.Operation(op)) {
			s.ops = append(s.ops, rest.Operation(op))
		}
	}
	for _, r := range grantRolesOf(t.Guard) {
		if !slices.Contains(s.roles, r) {
			s.roles = append(s.roles, r)
		}
	}
	return s
}

// checkTables checks RLS and grants of each served table; served holds
// what the config serves of them (nil for a table given with --table).
func checkTables(ctx context.Context, pool *pgxpool.Pool, tables []string, served map[string]*servedTable) []check {
	if len(tables) == 0 {
		return []check{{statusSkip, "served tables", "none given (use --config or --table)", ""}}
	}
	var out []check
	for _, t := range tables {
		out = append(out, checkTable(ctx, pool, t, served[t])...)
	}
	return out
}

func checkTable(ctx context.Context, pool *pgxpool.Pool, table string, served *servedTable) []check {
	allowed := served != nil && served.allowWithoutRLS
	// The same reading and verdict as serve's and the rest package's
	// start-up check (db.CheckRLS); the doctor also asks for FORCE, so
	// that the owner (who migrates) is bound too.
	p, err := db.CheckRLS(ctx, pool, table)
	var rlsErr *db.RLSError
	if errors.Is(err, db.ErrNoRelation) {
		return []check{{statusFail, "table " + table, "does not exist", "create it with your migrations (tablegate migrate up --dir <dir>), or fix the table name in the config"}}
	}
	if err != nil && !errors.As(err, &rlsErr) {
		return []check{{statusFail, "table " + table, err.Error(), ""}}
	}
	name := p.Table
	var out []check
	rlsName := "RLS " + name
	switch {
	case rlsErr != nil && allowed:
		out = append(out, check{statusWarn, rlsName, "served WITHOUT row-level security (allow_without_rls): " + rlsErr.Reason, rlsErr.Fix})
	case rlsErr != nil && p.Kind == "table" && !p.RLS:
		out = append(out, check{statusFail, rlsName, "row-level security is DISABLED: every caller with a grant reads and writes every row",
			fmt.Sprintf("alter table %s enable row level security; alter table %s force row level security; then add policies", name, name)})
	case rlsErr != nil:
		out = append(out, check{statusFail, rlsName, rlsErr.Reason + " (serve refuses it)", rlsErr.Fix})
	case p.Kind == "view":
		out = append(out, check{statusOK, rlsName, "a view with security_invoker: the row-level security of the tables it reads applies", ""})
	case !p.ForceRLS:
		out = append(out, check{statusFail, rlsName, "enabled but not forced: the table owner bypasses the policies",
			fmt.Sprintf("alter table %s force row level security", name)})
	case p.Policies == 0:
		out = append(out, check{statusWarn, rlsName, "enabled and forced, but no policies: every request sees no rows",
			"add policies (create policy ...)"})
	default:
		out = append(out, check{statusOK, rlsName, fmt.Sprintf("enabled and forced, %d polic(ies)", p.Policies), ""})
	}

	privs := p.Privileges
	authUse := slices.Contains(p.SchemaUsage, "authenticated")
	grantName := "grants " + name
	has := func(p string) bool { return slices.Contains(privs, p) }
	var problems []string
	fix := ""
	for _, r := range []string{"anon", "authenticated"} {
		if has(r + ":TRUNCATE") {
			problems = append(problems, r+" may TRUNCATE (row-level security does not apply to TRUNCATE)")
			fix = fmt.Sprintf("revoke truncate on %s from anon, authenticated", name)
		}
	}
	if len(problems) > 0 {
		out = append(out, check{statusFail, grantName, strings.Join(problems, "; "), fix})
		return out
	}
	switch {
	case !authUse:
		out = append(out, check{statusFail, grantName, "authenticated lacks USAGE on the table's schema: every request fails",
			fmt.Sprintf("grant usage on schema %s to anon, authenticated", p.Schema)})
	case !has("authenticated:SELECT"):
		out = append(out, check{statusWarn, grantName, "authenticated has no SELECT: reads answer 403 before RLS is consulted",
			fmt.Sprintf("grant select on %s to authenticated", name)})
	case has("anon:INSERT") || has("anon:UPDATE") || has("anon:DELETE"):
		out = append(out, check{statusWarn, grantName, "anon (no session) holds write grants; only the policies stand in the way",
			fmt.Sprintf("revoke insert, update, delete on %s from anon unless callers without a session must write", name)})
	default:
		var list []string
		for _, p := range privs {
			list = append(list, strings.ToLower(p))
		}
		out = append(out, check{statusOK, grantName, strings.Join(list, " "), ""})
	}
	// The served operations' grants, as serve checks them at start.
	if served != nil {
		var missing, fixes []string
		for _, m := range rest.MissingGrants(p, served.ops, served.roles) {
			missing = append(missing, fmt.Sprintf("%s: %s lacks %s", m.Operation, m.Role, strings.ToUpper(strings.Join(m.Privileges, ", "))))
			fixes = append(fixes, m.Fix)
		}
		if len(missing) > 0 {
			out = append(out, check{statusWarn, "operations " + name, strings.Join(missing, "; ") + " (each answers 403)", strings.Join(slices.Compact(fixes), "; ")})
		}
	}
	return out
}

// checkAnonWrites lists write commands open to anonymous sign-ins, with the
// SQL module's tablegate.write_policies_without_anon_check when the
// database has it, else with a reference check of the served tables'
// policies.
func checkAnonWrites(ctx context.Context, pool *pgxpool.Pool, tables []string) check {
	const name = "anonymous sign-ins"
	if len(tables) == 0 {
		return check{statusSkip, name, "no served tables given", ""}
	}
	var have bool
	_ = pool.QueryRow(ctx, `select to_regprocedure('tablegate.write_policies_without_anon_check(text[])') is not null`).Scan(&have)
	var q string
	if have {
		q = `select w.table_schema || '.' || w.table_name, w.command, w.reason, w.policies
		  from tablegate.write_policies_without_anon_check(
		    array(select distinct c.relnamespace::regnamespace::text from pg_class c where c.oid = any($1::regclass[]))) w
		  where to_regclass(quote_ident(w.table_schema) || '.' || quote_ident(w.table_name)) = any($1::regclass[])`
	} else {
		q = `with t as (select c.oid, format('%I.%I', c.relnamespace::regnamespace::text, c.relname) as name, c.relrowsecurity as rls
		    from pg_class c where c.oid = any($1::regclass[]) and c.relkind in ('r','p')),
		  cmds(cmd, polcmd) as (values ('INSERT','a'::"char"), ('UPDATE','w'), ('DELETE','d'))
		  select t.name, cmds.cmd, case when t.rls then 'policy_without_check' else 'rls_disabled' end,
		    array(select p.polname::text from pg_policy p where p.polrelid = t.oid and p.polcmd in (cmds.polcmd, '*')
		      and p.polpermissive
		      and coalesce(pg_get_expr(p.polqual, p.polrelid), '') || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '') !~ 'is_anonymous|is_full_user|full_member_tenant'
		      order by 1)
		  from t cross join cmds
		  where has_table_privilege('authenticated', t.oid, cmds.cmd)
		    and (not t.rls or exists (select 1 from pg_policy p where p.polrelid = t.oid and p.polcmd in (cmds.polcmd, '*')
		      and p.polpermissive
		      and coalesce(pg_get_expr(p.polqual, p.polrelid), '') || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '') !~ 'is_anonymous|is_full_user|full_member_tenant'))
		  order by 1, 2`
	}
	var oids []string
	for _, t := range tables {
		var ok bool
		if err := pool.QueryRow(ctx, `select to_regclass($1) is not null`, t).Scan(&ok); err == nil && ok {
			oids = append(oids, t)
		}
	}
	if len(oids) == 0 {
		return check{statusSkip, name, "no existing served tables", ""}
	}
	rows, err := pool.Query(ctx, q, oids)
	if err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	var open []string
	for rows.Next() {
		var tbl, cmd, reason string
		var pols []string
		if err := rows.Scan(&tbl, &cmd, &reason, &pols); err != nil {
			rows.Close()
			return check{statusFail, name, err.Error(), ""}
		}
		s := tbl + " " + cmd
		if reason == "rls_disabled" {
			s += " (RLS disabled)"
		} else if len(pols) > 0 {
			s += " (policy " + strings.Join(pols, ", ") + ")"
		}
		open = append(open, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	if len(open) > 0 {
		return check{statusWarn, name, "writes open to anonymous sign-ins: " + strings.Join(open, "; "),
			"add \"not tablegate.is_anonymous()\" to the write policies, or call tablegate.exclude_anonymous('<table>') if your migrations have it"}
	}
	return check{statusOK, name, "every write policy of the served tables excludes anonymous sign-ins", ""}
}

// tenantRead finds literal reads of a tenant-looking claim in SQL text:
// ->> 'org_id', -> 'tenant_id', #>> '{app_metadata,tenant_id}'.
var tenantRead = regexp.MustCompile(`(?:->>?\s*'([A-Za-z_]*(?:tenant|org)[A-Za-z0-9_]*)'|#>>?\s*'\{([^}]*(?:tenant|org)[^}]*)\}')`)

// checkTenantMembers compares tablegate.tenant_members, which the views
// tablegate.member_tenant and full_member_tenant read, with the tenant rows
// of tablegate.memberships it is kept equal to by triggers: writes that
// fire no trigger (replica mode in seed files and data-only restores,
// disabled triggers) leave it behind. No check where the table does not
// exist (a database not migrated that far).
func checkTenantMembers(ctx context.Context, pool *pgxpool.Pool) []check {
	const name = "tenant memberships"
	var have bool
	if err := pool.QueryRow(ctx, `select to_regclass('tablegate.tenant_members') is not null`).Scan(&have); err != nil || !have {
		return nil
	}
	var missing, extra int64
	err := pool.QueryRow(ctx, `select
	    (select count(*) from (select user_id::text, scope_id from tablegate.memberships where scope = 'tenant'
	                           except select user_key, tenant from tablegate.tenant_members) d),
	    (select count(*) from (select user_key, tenant from tablegate.tenant_members
	                           except select user_id::text, scope_id from tablegate.memberships where scope = 'tenant') d)`).Scan(&missing, &extra)
	switch {
	case err != nil:
		return []check{{statusSkip, name, "cannot compare tablegate.tenant_members with tablegate.memberships: " + err.Error(), "run the doctor as the tables' owner"}}
	case missing > 0 || extra > 0:
		return []check{{statusFail, name, fmt.Sprintf("tablegate.tenant_members lacks %d membership(s) and holds %d removed one(s): the policies reading tablegate.member_tenant decide from it", missing, extra),
			"as the tables' owner: select tablegate.resync_tenant_members(); (writes with session_replication_role = replica or disabled triggers skip the sync)"}}
	}
	return []check{{statusOK, name, "tablegate.tenant_members matches tablegate.memberships", ""}}
}

// checkTenantClaim compares tablegate.tenant_claim() with the claim names
// that policies and functions read directly.
func checkTenantClaim(ctx context.Context, pool *pgxpool.Pool) check {
	const name = "tenant claim"
	var setting *string
	if err := pool.QueryRow(ctx, `select case when to_regprocedure('tablegate.tenant_claim()') is not null then tablegate.tenant_claim() end`).Scan(&setting); err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	if setting == nil {
		return check{statusFail, name, "tablegate.tenant_claim() is missing", "run \"tablegate migrate up\""}
	}
	want := *setting
	last := want[strings.LastIndex(want, ".")+1:]
	rows, err := pool.Query(ctx, `
	  select 'policy ' || polname || ' on ' || (select format('%I.%I', relnamespace::regnamespace::text, relname) from pg_class where oid = polrelid),
	         coalesce(pg_get_expr(polqual, polrelid), '') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), '')
	  from pg_policy
	  union all
	  select 'function ' || p.oid::regprocedure::text, p.prosrc
	  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
	  where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
	    and p.prolang <> (select oid from pg_language where lanname = 'c')
	    and p.prolang <> (select oid from pg_language where lanname = 'internal')`)
	if err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	defer rows.Close()
	var mismatched []string
	users := 0
	for rows.Next() {
		var obj, src string
		if err := rows.Scan(&obj, &src); err != nil {
			return check{statusFail, name, err.Error(), ""}
		}
		if strings.Contains(src, "current_tenant_id()") {
			users++
		}
		if strings.Contains(src, "tenant_claim()") {
			continue // reads the setting itself
		}
		for _, m := range tenantRead.FindAllStringSubmatch(src, -1) {
			claim := m[1]
			if claim == "" {
				parts := strings.Split(m[2], ",")
				claim = strings.TrimSpace(parts[len(parts)-1])
			}
			if claim != last {
				mismatched = append(mismatched, fmt.Sprintf("%s reads %q", obj, claim))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return check{statusFail, name, err.Error(), ""}
	}
	if len(mismatched) > 0 {
		return check{statusWarn, name, fmt.Sprintf("setting is %q but %s", want, strings.Join(mismatched, "; ")),
			"read the tenant with tablegate.current_tenant_id() everywhere, or select tablegate.set_tenant_claim('<claim>') to match"}
	}
	return check{statusOK, name, fmt.Sprintf("%q; %d polic(ies)/function(s) use tablegate.current_tenant_id(), none reads another tenant claim", want, users), ""}
}

// checkReuseInterval gives advice on GoTrue's refresh-token reuse interval.
func checkReuseInterval(o doctorOptions) check {
	const name = "refresh-token reuse interval"
	const advice = "keep it at 10 s (the Supabase default): concurrent refreshes from several server instances rely on it; 0 signs users out on a race"
	if v := o.getenv("GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			return check{statusWarn, name, "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL=" + v, advice}
		}
		return check{statusOK, name, "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL=" + v, ""}
	}
	sa, err := readSupabaseConfig(o.supabaseConfig)
	switch {
	case err != nil:
		return check{statusWarn, name, err.Error(), "fix the file, or point --supabase-config at the Supabase CLI's config.toml"}
	case sa == nil:
		return check{statusInfo, name, "not found in the environment or " + o.supabaseConfig + "; " + advice, ""}
	case sa.bad["refresh_token_reuse_interval"] != "":
		return check{statusWarn, name, sa.bad["refresh_token_reuse_interval"], advice}
	case sa.bad["enable_refresh_token_rotation"] != "":
		return check{statusWarn, name, sa.bad["enable_refresh_token_rotation"], "enable_refresh_token_rotation = true"}
	case sa.EnableRefreshTokenRotation != nil && !*sa.EnableRefreshTokenRotation:
		return check{statusWarn, name, o.supabaseConfig + ": enable_refresh_token_rotation = false", "enable rotation; a leaked refresh token then works only once"}
	case sa.RefreshTokenReuseInterval == nil:
		return check{statusInfo, name, o.supabaseConfig + " does not set refresh_token_reuse_interval (default 10 s); " + advice, ""}
	case *sa.RefreshTokenReuseInterval < 10:
		return check{statusWarn, name, fmt.Sprintf("%s: refresh_token_reuse_interval = %d", o.supabaseConfig, *sa.RefreshTokenReuseInterval), advice}
	}
	return check{statusOK, name, fmt.Sprintf("%s: %d s", o.supabaseConfig, *sa.RefreshTokenReuseInterval), ""}
}

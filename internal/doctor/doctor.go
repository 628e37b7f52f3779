// Package doctor checks a tablegate setup and prints the checklist of
// "tablegate doctor": the signing keys and the JWKS, the database and its
// migrations, row-level security, grants and policies of the served
// tables, the tenant claim and memberships, and GoTrue's refresh-token
// settings. The command resolves its flags, the serve config and the
// Supabase CLI's config.toml into [Options]; [Run] runs the checks and
// [Print] writes them.
package doctor

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
	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/rest"
)

// Status is the verdict of a check, from best to worst.
type Status int

// The verdicts of a check.
const (
	OK   Status = iota // ✓ as it should be
	Info               // i advice, nothing wrong found
	Skip               // - not checked (nothing to check)
	Warn               // ! works, but probably not as meant
	Fail               // ✗ broken
)

// mark is the sign of s in the checklist.
func (s Status) mark() string {
	return [...]string{"✓", "i", "-", "!", "✗"}[s]
}

// Check is one line of the checklist: a verdict on Name, what was found
// and, for a warning or a failure, how to fix it.
type Check struct {
	Status Status
	Name   string
	Detail string
	Fix    string
}

// Options is what the checks look at, resolved by the command from its
// flags, the environment and the config files.
type Options struct {
	// Config is the serve config (--config) whose tables are served; nil:
	// none given.
	Config *Config
	// SigningKeys is the signing keys file.
	SigningKeys string
	// SupabaseConfig is the path of the Supabase CLI's config.toml and
	// Supabase what it sets in [auth] (nil: the file does not exist);
	// SupabaseErr says why it could not be read.
	SupabaseConfig string
	Supabase       *SupabaseAuth
	SupabaseErr    error
	// AuthURL (--auth-url) and JWKSURL (--jwks-url) name the JWKS to
	// check; empty: the config's, then the environment's.
	AuthURL, JWKSURL string
	// DatabaseURL is the database to check; "": none was given.
	DatabaseURL string
	// Connect opens a pool on a database URL (with an error that says
	// what to check, a *db.ConnectError where it can).
	Connect func(ctx context.Context, url string) (*pgxpool.Pool, error)
	// Tables are the served tables to check, in order; Served holds what
	// the config serves of each (none for a table given with --table).
	Tables []string
	Served map[string]*Served
	// Getenv reads the environment (SUPABASE_URL, SUPABASE_JWKS_URL,
	// SUPABASE_JWKS, GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL); nil:
	// an empty one.
	Getenv func(string) string
	// HTTPClient fetches the JWKS; nil: one with a 5 s timeout.
	HTTPClient *http.Client
}

// Config is what the checks need of a serve config.
type Config struct {
	// Path is the file; Err why it could not be loaded (then nothing
	// else counts).
	Path string
	Err  error
	// Routes is the number of table routes it serves.
	Routes int
	// Orphans are the permission keys granted to nobody, each as
	// "tables.<route>.permissions.<op> = <key>".
	Orphans []string
	// JWKSURL and AuthURL are its auth.jwks_url and auth.url.
	JWKSURL, AuthURL string
}

// SupabaseAuth is what the Supabase CLI's config.toml sets in [auth].
type SupabaseAuth struct {
	// SigningKeysPath is signing_keys_path resolved against the file's
	// directory, "" when unset.
	SigningKeysPath string
	// RefreshTokenReuseInterval and EnableRefreshTokenRotation are nil
	// when unset.
	RefreshTokenReuseInterval  *int64
	EnableRefreshTokenRotation *bool
	// Bad names the settings of the wrong type (setting → problem).
	Bad map[string]string
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

// Print writes the checklist, a summary line after it, and reports
// whether it failed: a check failed, or with strict a check warned.
func Print(w io.Writer, checks []Check, strict bool) bool {
	var nFail, nWarn int
	for _, c := range checks {
		fmt.Fprintf(w, "%s %s", c.Status.mark(), printable(c.Name))
		if c.Detail != "" {
			fmt.Fprintf(w, ": %s", printable(c.Detail))
		}
		fmt.Fprintln(w)
		if c.Fix != "" && c.Status >= Warn {
			fmt.Fprintf(w, "    → %s\n", printable(c.Fix))
		}
		switch c.Status {
		case Fail:
			nFail++
		case Warn:
			nWarn++
		}
	}
	fmt.Fprintf(w, "\n%d failed, %d warning(s)\n", nFail, nWarn)
	return nFail > 0 || (strict && nWarn > 0)
}

// Run runs every check in order.
func Run(ctx context.Context, o Options) []Check {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	var out []Check
	add := func(c ...Check) { out = append(out, c...) }

	cfg := o.Config
	if cfg != nil {
		if cfg.Err != nil {
			add(Check{Fail, "config", cfg.Err.Error(), "fix the config file (see tablegate serve --help)"})
			cfg = nil
		} else {
			add(Check{OK, "config", fmt.Sprintf("%s: %d table(s)", cfg.Path, cfg.Routes), ""})
			if len(cfg.Orphans) > 0 {
				add(Check{Warn, "permissions", "granted to nobody: " + strings.Join(cfg.Orphans, "; "),
					`list the roles that hold each key in "permissions" ({"todos.delete": ["admin"]}); until then every caller gets 403 PERMISSION_DENIED`})
			}
		}
	}

	ks, keysCheck := checkSigningKeys(o)
	add(keysCheck)
	add(checkJWKS(ctx, o, cfg, ks))

	if o.DatabaseURL == "" {
		add(Check{Fail, "database", "no database URL", "pass --database-url or set DATABASE_URL"})
	} else if pool, err := o.Connect(ctx, o.DatabaseURL); err != nil {
		var ce *db.ConnectError
		if errors.As(err, &ce) {
			add(Check{Fail, "database", ce.Problem, ce.Fix})
		} else {
			add(Check{Fail, "database", err.Error(), "start Postgres or fix the URL"})
		}
	} else {
		defer pool.Close()
		var version string
		_ = pool.QueryRow(ctx, "show server_version").Scan(&version)
		add(Check{OK, "database", "reachable, PostgreSQL " + version, ""})
		add(checkMigrations(ctx, pool))
		add(checkTables(ctx, pool, o.Tables, o.Served)...)
		add(checkAnonWrites(ctx, pool, o.Tables))
		add(checkPerRowHelpers(ctx, pool, o.Tables))
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
func checkSigningKeys(o Options) (*keys.Set, Check) {
	const name = "signing keys"
	sa, cerr := o.Supabase, o.SupabaseErr
	var configured string
	if sa != nil {
		configured = sa.SigningKeysPath
	}
	set := configured != ""
	same := set && samePath(configured, o.SigningKeys)
	var configProblem string
	switch {
	case cerr != nil:
		configProblem = "cannot read " + o.SupabaseConfig + " (" + cerr.Error() + "), so its [auth] signing_keys_path is unknown"
	case sa != nil && sa.Bad["signing_keys_path"] != "":
		configProblem = sa.Bad["signing_keys_path"]
	}
	if _, err := os.Stat(o.SigningKeys); errors.Is(err, os.ErrNotExist) {
		switch {
		case same:
			return nil, Check{Warn, name, "no signing keys file at " + o.SigningKeys + " ([auth] signing_keys_path of " + o.SupabaseConfig + ")",
				"create it with \"tablegate keys new\" (it writes there); until then the local auth server cannot sign tokens"}
		case set:
			return nil, Check{Warn, name, "no signing keys file at " + o.SigningKeys + "; the local auth server signs with " + configured + " ([auth] signing_keys_path of " + o.SupabaseConfig + ")",
				"use --signing-keys " + configured + ", or create this file with \"tablegate keys new --path " + o.SigningKeys + "\" and point signing_keys_path at it"}
		}
		return nil, Check{Warn, name, "no signing keys file at " + o.SigningKeys,
			"create one with \"tablegate keys new --path " + o.SigningKeys + "\" and set [auth] signing_keys_path in " + o.SupabaseConfig + "; without it local tokens are HS256 and cannot be verified with a JWKS"}
	}
	ks, err := keys.Load(o.SigningKeys)
	if err != nil {
		return nil, Check{Fail, name, err.Error(), "recreate the file with \"tablegate keys new --force --path " + o.SigningKeys + "\""}
	}
	s, err := ks.Signer()
	if err != nil {
		return ks, Check{Fail, name, err.Error(), "one key needs key_ops [\"sign\",\"verify\"]"}
	}
	detail := fmt.Sprintf("%s: %d key(s), signing kid %s (%s)", o.SigningKeys, len(ks.Keys), s.Kid, s.Alg)
	switch {
	case configProblem != "":
		return ks, Check{Warn, name, detail + "; but " + configProblem,
			"fix " + o.SupabaseConfig + ": [auth] signing_keys_path = \"" + relativeToConfig(o.SupabaseConfig, o.SigningKeys) + "\""}
	case sa == nil: // no Supabase CLI project: nothing to compare with
	case !set:
		return ks, Check{Warn, name, detail + "; but " + o.SupabaseConfig + " sets no [auth] signing_keys_path, so the local auth server signs HS256 tokens tablegate cannot verify",
			"add signing_keys_path = \"" + relativeToConfig(o.SupabaseConfig, o.SigningKeys) + "\" under [auth] in " + o.SupabaseConfig + " and restart it (supabase stop && supabase start)"}
	case !same:
		return ks, Check{Warn, name, detail + "; but the local auth server signs with " + configured + " ([auth] signing_keys_path of " + o.SupabaseConfig + ")",
			"use --signing-keys " + configured + ", or point signing_keys_path at this file"}
	}
	return ks, Check{OK, name, detail, ""}
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

func checkJWKS(ctx context.Context, o Options, cfg *Config, ks *keys.Set) Check {
	const name = "JWKS"
	// Flags first, then the order serve and authctx use: an explicit JWKS
	// URL, then the inline SUPABASE_JWKS (nothing fetched), then the
	// project URL.
	u := o.JWKSURL
	if u == "" && o.AuthURL != "" {
		u = strings.TrimRight(o.AuthURL, "/") + "/auth/v1/.well-known/jwks.json"
	}
	if u == "" && cfg != nil {
		u = cfg.JWKSURL
	}
	if u == "" {
		u = strings.TrimSpace(o.Getenv("SUPABASE_JWKS_URL"))
	}
	if u == "" {
		if raw := strings.TrimSpace(o.Getenv("SUPABASE_JWKS")); raw != "" {
			return jwksVerdict("SUPABASE_JWKS (inline)", []byte(raw), ks)
		}
		base := ""
		if cfg != nil {
			base = cfg.AuthURL
		}
		if base == "" {
			base = o.Getenv("SUPABASE_URL")
		}
		if base != "" {
			u = strings.TrimRight(base, "/") + "/auth/v1/.well-known/jwks.json"
		}
	}
	if u == "" {
		return Check{Skip, name, "no --auth-url, --jwks-url, SUPABASE_URL, SUPABASE_JWKS_URL or SUPABASE_JWKS", ""}
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Check{Fail, name, "invalid JWKS URL", "pass a full http(s) URL"}
	}
	resp, err := client.Do(req)
	if req.URL.User != nil {
		u = req.URL.Redacted() // a password in the URL is not printed
	}
	if err != nil {
		return Check{Fail, name, fmt.Sprintf("%s unreachable: %v", u, err), "start the auth server (supabase start) or fix --auth-url"}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return Check{Fail, name, fmt.Sprintf("%s answered %d", u, resp.StatusCode), "check the URL: it should end in /auth/v1/.well-known/jwks.json"}
	}
	return jwksVerdict(u, body, ks)
}

// jwksVerdict checks a JWK Set document (fetched from src, or inline) for
// asymmetric keys and for the local signing kid.
func jwksVerdict(src string, body []byte, ks *keys.Set) Check {
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
			return Check{Fail, name, src + " is not a JWKS document", "check the URL, or that SUPABASE_JWKS holds {\"keys\":[...]}"}
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
		return Check{Warn, name, src + " lists no asymmetric key (legacy HS256 secret only)",
			"enable asymmetric JWT signing keys (ES256) in the Supabase dashboard, or set [auth] signing_keys_path locally; tablegate verifies only asymmetric tokens"}
	}
	if ks != nil {
		s, err := ks.Signer()
		if err == nil && !slices.Contains(kids, s.Kid) {
			return Check{Warn, name, fmt.Sprintf("%s holds %s keys but does not list the local signing kid %s", src, strings.Join(algs, ", "), s.Kid),
				"point the auth server at the same signing keys file, or mint tokens with its keys"}
		}
	}
	return Check{OK, name, fmt.Sprintf("%s: %d asymmetric key(s) (%s)", src, len(algs), strings.Join(algs, ", ")), ""}
}

func checkMigrations(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "migrations"
	p, err := db.NewMigrator(pool)
	if err != nil {
		return Check{Fail, name, err.Error(), ""}
	}
	defer p.Close()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return Check{Fail, name, err.Error(), "run \"tablegate migrate up\""}
	}
	if cur < target {
		return Check{Fail, name, fmt.Sprintf("version %d, %d available", cur, target), "run \"tablegate migrate up\""}
	}
	if cur > target {
		return Check{Warn, name, fmt.Sprintf("version %d, newer than this build's newest (%d)", cur, target),
			"use the tablegate build that migrated this database (this one may not know its schema)"}
	}
	return Check{OK, name, fmt.Sprintf("current (version %d)", cur), ""}
}

// Served is what a serve config serves of one table, over all the routes
// naming it.
type Served struct {
	// AllowWithoutRLS: a route serves it without row-level security
	// (allow_without_rls).
	AllowWithoutRLS bool
	// Ops are the operations served, Roles the database roles the callers
	// of its guards run as; the grants of each pair are checked.
	Ops   []rest.Operation
	Roles []string
}

// checkTables checks RLS and grants of each served table; served holds
// what the config serves of them (nil for a table given with --table).
func checkTables(ctx context.Context, pool *pgxpool.Pool, tables []string, served map[string]*Served) []Check {
	if len(tables) == 0 {
		return []Check{{Skip, "served tables", "none given (use --config or --table)", ""}}
	}
	var out []Check
	for _, t := range tables {
		out = append(out, checkTable(ctx, pool, t, served[t])...)
	}
	return out
}

func checkTable(ctx context.Context, pool *pgxpool.Pool, table string, served *Served) []Check {
	allowed := served != nil && served.AllowWithoutRLS
	// The same reading and verdict as serve's and the rest package's
	// start-up check (db.CheckRLS); the doctor also asks for FORCE, so
	// that the owner (who migrates) is bound too.
	p, err := db.CheckRLS(ctx, pool, table)
	var rlsErr *db.RLSError
	if errors.Is(err, db.ErrNoRelation) {
		return []Check{{Fail, "table " + table, "does not exist", "create it with your migrations (tablegate migrate up --dir <dir>), or fix the table name in the config"}}
	}
	if err != nil && !errors.As(err, &rlsErr) {
		return []Check{{Fail, "table " + table, err.Error(), ""}}
	}
	name := p.Table
	var out []Check
	rlsName := "RLS " + name
	switch {
	case rlsErr != nil && allowed:
		out = append(out, Check{Warn, rlsName, "served WITHOUT row-level security (allow_without_rls): " + rlsErr.Reason, rlsErr.Fix})
	case rlsErr != nil && p.Kind == "table" && !p.RLS:
		out = append(out, Check{Fail, rlsName, "row-level security is DISABLED: every caller with a grant reads and writes every row",
			fmt.Sprintf("alter table %s enable row level security; alter table %s force row level security; then add policies", name, name)})
	case rlsErr != nil:
		out = append(out, Check{Fail, rlsName, rlsErr.Reason + " (serve refuses it)", rlsErr.Fix})
	case p.Kind == "view":
		out = append(out, Check{OK, rlsName, "a view with security_invoker: the row-level security of the tables it reads applies", ""})
	case !p.ForceRLS:
		out = append(out, Check{Fail, rlsName, "enabled but not forced: the table owner bypasses the policies",
			fmt.Sprintf("alter table %s force row level security", name)})
	case p.Policies == 0:
		out = append(out, Check{Warn, rlsName, "enabled and forced, but no policies: every request sees no rows",
			"add policies (create policy ...)"})
	default:
		out = append(out, Check{OK, rlsName, fmt.Sprintf("enabled and forced, %d polic(ies)", p.Policies), ""})
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
		out = append(out, Check{Fail, grantName, strings.Join(problems, "; "), fix})
		return out
	}
	switch {
	case !authUse:
		out = append(out, Check{Fail, grantName, "authenticated lacks USAGE on the table's schema: every request fails",
			fmt.Sprintf("grant usage on schema %s to anon, authenticated", p.Schema)})
	case !has("authenticated:SELECT"):
		out = append(out, Check{Warn, grantName, "authenticated has no SELECT: reads answer 403 before RLS is consulted",
			fmt.Sprintf("grant select on %s to authenticated", name)})
	case has("anon:INSERT") || has("anon:UPDATE") || has("anon:DELETE"):
		out = append(out, Check{Warn, grantName, "anon (no session) holds write grants; only the policies stand in the way",
			fmt.Sprintf("revoke insert, update, delete on %s from anon unless callers without a session must write", name)})
	default:
		var list []string
		for _, p := range privs {
			list = append(list, strings.ToLower(p))
		}
		out = append(out, Check{OK, grantName, strings.Join(list, " "), ""})
	}
	// The served operations' grants, as serve checks them at start.
	if served != nil {
		var missing, fixes []string
		for _, m := range rest.MissingGrants(p, served.Ops, served.Roles) {
			missing = append(missing, fmt.Sprintf("%s: %s lacks %s", m.Operation, m.Role, strings.ToUpper(strings.Join(m.Privileges, ", "))))
			fixes = append(fixes, m.Fix)
		}
		if len(missing) > 0 {
			out = append(out, Check{Warn, "operations " + name, strings.Join(missing, "; ") + " (each answers 403)", strings.Join(slices.Compact(fixes), "; ")})
		}
	}
	return out
}

// checkAnonWrites lists write commands open to anonymous sign-ins, with the
// SQL module's tablegate.write_policies_without_anon_check when the
// database has it, else with a reference check of the served tables'
// policies.
func checkAnonWrites(ctx context.Context, pool *pgxpool.Pool, tables []string) Check {
	const name = "anonymous sign-ins"
	if len(tables) == 0 {
		return Check{Skip, name, "no served tables given", ""}
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
		return Check{Skip, name, "no existing served tables", ""}
	}
	rows, err := pool.Query(ctx, q, oids)
	if err != nil {
		return Check{Fail, name, err.Error(), ""}
	}
	var open []string
	for rows.Next() {
		var tbl, cmd, reason string
		var pols []string
		if err := rows.Scan(&tbl, &cmd, &reason, &pols); err != nil {
			rows.Close()
			return Check{Fail, name, err.Error(), ""}
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
		return Check{Fail, name, err.Error(), ""}
	}
	if len(open) > 0 {
		return Check{Warn, name, "writes open to anonymous sign-ins: " + strings.Join(open, "; "),
			"add \"not tablegate.is_anonymous()\" to the write policies, or call tablegate.exclude_anonymous('<table>') if your migrations have it"}
	}
	return Check{OK, name, "every write policy of the served tables excludes anonymous sign-ins", ""}
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
func checkTenantMembers(ctx context.Context, pool *pgxpool.Pool) []Check {
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
		return []Check{{Skip, name, "cannot compare tablegate.tenant_members with tablegate.memberships: " + err.Error(), "run the doctor as the tables' owner"}}
	case missing > 0 || extra > 0:
		return []Check{{Fail, name, fmt.Sprintf("tablegate.tenant_members lacks %d membership(s) and holds %d removed one(s): the policies reading tablegate.member_tenant decide from it", missing, extra),
			"as the tables' owner: select tablegate.resync_tenant_members(); (writes with session_replication_role = replica or disabled triggers skip the sync)"}}
	}
	return []Check{{OK, name, "tablegate.tenant_members matches tablegate.memberships", ""}}
}

// checkTenantClaim compares tablegate.tenant_claim() with the claim names
// that policies and functions read directly.
func checkTenantClaim(ctx context.Context, pool *pgxpool.Pool) Check {
	const name = "tenant claim"
	var setting *string
	if err := pool.QueryRow(ctx, `select case when to_regprocedure('tablegate.tenant_claim()') is not null then tablegate.tenant_claim() end`).Scan(&setting); err != nil {
		return Check{Fail, name, err.Error(), ""}
	}
	if setting == nil {
		return Check{Fail, name, "tablegate.tenant_claim() is missing", "run \"tablegate migrate up\""}
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
		return Check{Fail, name, err.Error(), ""}
	}
	defer rows.Close()
	var mismatched []string
	users := 0
	for rows.Next() {
		var obj, src string
		if err := rows.Scan(&obj, &src); err != nil {
			return Check{Fail, name, err.Error(), ""}
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
		return Check{Fail, name, err.Error(), ""}
	}
	if len(mismatched) > 0 {
		return Check{Warn, name, fmt.Sprintf("setting is %q but %s", want, strings.Join(mismatched, "; ")),
			"read the tenant with tablegate.current_tenant_id() everywhere, or select tablegate.set_tenant_claim('<claim>') to match"}
	}
	return Check{OK, name, fmt.Sprintf("%q; %d polic(ies)/function(s) use tablegate.current_tenant_id(), none reads another tenant claim", want, users), ""}
}

// checkReuseInterval gives advice on GoTrue's refresh-token reuse interval.
func checkReuseInterval(o Options) Check {
	const name = "refresh-token reuse interval"
	const advice = "keep it at 10 s (the Supabase default): concurrent refreshes from several server instances rely on it; 0 signs users out on a race"
	if v := o.Getenv("GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			return Check{Warn, name, "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL=" + v, advice}
		}
		return Check{OK, name, "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL=" + v, ""}
	}
	sa, err := o.Supabase, o.SupabaseErr
	switch {
	case err != nil:
		return Check{Warn, name, err.Error(), "fix the file, or point --supabase-config at the Supabase CLI's config.toml"}
	case sa == nil:
		return Check{Info, name, "not found in the environment or " + o.SupabaseConfig + "; " + advice, ""}
	case sa.Bad["refresh_token_reuse_interval"] != "":
		return Check{Warn, name, sa.Bad["refresh_token_reuse_interval"], advice}
	case sa.Bad["enable_refresh_token_rotation"] != "":
		return Check{Warn, name, sa.Bad["enable_refresh_token_rotation"], "enable_refresh_token_rotation = true"}
	case sa.EnableRefreshTokenRotation != nil && !*sa.EnableRefreshTokenRotation:
		return Check{Warn, name, o.SupabaseConfig + ": enable_refresh_token_rotation = false", "enable rotation; a leaked refresh token then works only once"}
	case sa.RefreshTokenReuseInterval == nil:
		return Check{Info, name, o.SupabaseConfig + " does not set refresh_token_reuse_interval (default 10 s); " + advice, ""}
	case *sa.RefreshTokenReuseInterval < 10:
		return Check{Warn, name, fmt.Sprintf("%s: refresh_token_reuse_interval = %d", o.SupabaseConfig, *sa.RefreshTokenReuseInterval), advice}
	}
	return Check{OK, name, fmt.Sprintf("%s: %d s", o.SupabaseConfig, *sa.RefreshTokenReuseInterval), ""}
}

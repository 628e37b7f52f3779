package doctor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// perStatementHelpers are the helpers whose answer does not depend on the
// row when their arguments are constants: in a sub-select "(select f())"
// Postgres evaluates them once per statement, bare in a filter once per row.
var perStatementHelpers = []string{
	"auth.uid", "auth.jwt", "auth.role",
	"tablegate.claims", "tablegate.current_tenant_id", "tablegate.tenant_text", "tablegate.tenant_claim",
	"tablegate.claim_text", "tablegate.claim_array", "tablegate.has_role",
	"tablegate.is_anonymous", "tablegate.is_full_user", "tablegate.is_approver", "tablegate.approver_role",
	"tablegate.member_tenant_id", "tablegate.full_member_tenant_id", "tablegate.member_tenant_id_for",
}

// helperCall finds a call of a helper in deparsed SQL (pg_get_expr): the
// schema-qualified name and the opening parenthesis.
var helperCall = regexp.MustCompile(`\b(auth|tablegate)\.([a-z_]+)\(`)

// constantArgs matches an argument list of literals only ('x'::text, NULL, 42).
var constantArgs = regexp.MustCompile(`^\s*((('([^']|'')*')|NULL|-?[0-9.]+)(::[a-z ]+)?\s*,?\s*)*$`)

// perRowCalls returns the helper calls of a deparsed policy expression that
// Postgres evaluates once per row although a per-statement form exists:
//
//   - a helper of perStatementHelpers with constant arguments, outside any
//     sub-select ("tablegate.current_tenant_id()" rather than
//     "(SELECT tablegate.current_tenant_id() …)");
//   - tablegate.is_member('tenant', <column>) in an expression that also
//     reads tablegate.current_tenant_id(): the pair is
//     tenant = (select id from tablegate.member_tenant).
//
// A call inside a sub-select counts as per statement; a sub-select that
// refers to the row (correlated) runs per row too, which this does not tell.
func perRowCalls(expr string) []string {
	var out []string
	inSubselect, inString := subselectDepths(expr)
	for _, m := range helperCall.FindAllStringSubmatchIndex(expr, -1) {
		name := expr[m[2]:m[3]] + "." + expr[m[4]:m[5]]
		open := m[1] - 1
		close := matchingParen(expr, open)
		if close < 0 || inSubselect[m[0]] || inString[m[0]] {
			continue
		}
		args := expr[open+1 : close]
		switch {
		case name == "tablegate.is_member" && strings.HasPrefix(strings.TrimSpace(args), "'tenant'") &&
			!constantArgs.MatchString(args) && strings.Contains(expr, "tablegate.current_tenant_id()"):
			out = append(out, "tablegate.is_member('tenant', …) per row (use tenant_id = (select id from tablegate.member_tenant))")
		case slices.Contains(perStatementHelpers, name) && constantArgs.MatchString(args):
			out = append(out, expr[m[0]:close+1]+" per row (use (select "+expr[m[0]:close+1]+"))")
		}
	}
	return out
}

// endOfString returns the index of the quote closing the SQL string
// literal that opens at s[i] (a doubled quote is an escaped one), or
// len(s)-1.
func endOfString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\'' {
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j
		}
	}
	return len(s) - 1
}

// matchingParen returns the index of the parenthesis closing the one at
// open, skipping string literals; -1 when unbalanced.
func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'':
			i = endOfString(s, i)
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// subselectDepths marks every byte of s that sits inside a parenthesized
// sub-select "( SELECT …)", and every byte of a string literal.
func subselectDepths(s string) (in, str []bool) {
	in = make([]bool, len(s))
	str = make([]bool, len(s))
	var stack []bool // per open parenthesis: is it a sub-select?
	sub := 0         // open sub-selects
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			end := endOfString(s, i)
			for k := i; k <= end; k++ {
				in[k] = sub > 0
				str[k] = true
			}
			i = end
			continue
		case '(':
			isSub := strings.HasPrefix(strings.ToUpper(strings.TrimLeft(s[i+1:], " \n\t")), "SELECT")
			stack = append(stack, isSub)
			if isSub {
				sub++
			}
		case ')':
			if n := len(stack); n > 0 {
				if stack[n-1] {
					sub--
				}
				stack = stack[:n-1]
			}
		}
		in[i] = sub > 0
	}
	return in, str
}

// checkPerRowHelpers warns about policies of the served tables that call a
// helper once per row where a per-statement form exists (docs/tenant.md).
func checkPerRowHelpers(ctx context.Context, pool *pgxpool.Pool, tables []string) Check {
	const name = "policy cost"
	var existing []string
	for _, t := range tables {
		var ok bool
		if err := pool.QueryRow(ctx, `select to_regclass($1) is not null`, t).Scan(&ok); err == nil && ok {
			existing = append(existing, t)
		}
	}
	if len(existing) == 0 {
		return Check{Skip, name, "no existing served tables", ""}
	}
	rows, err := pool.Query(ctx, `
	  select format('%I.%I', c.relnamespace::regnamespace::text, c.relname), p.polname::text,
	         coalesce(pg_get_expr(p.polqual, p.polrelid), ''), coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '')
	  from pg_policy p join pg_class c on c.oid = p.polrelid
	  where p.polrelid = any($1::regclass[])
	  order by 1, 2`, existing)
	if err != nil {
		return Check{Fail, name, err.Error(), ""}
	}
	defer rows.Close()
	var found []string
	policies := 0
	for rows.Next() {
		var tbl, pol, qual, with string
		if err := rows.Scan(&tbl, &pol, &qual, &with); err != nil {
			return Check{Fail, name, err.Error(), ""}
		}
		policies++
		seen := map[string]bool{}
		var calls []string
		for _, c := range append(perRowCalls(qual), perRowCalls(with)...) {
			if !seen[c] {
				seen[c] = true
				calls = append(calls, c)
			}
		}
		if len(calls) > 0 {
			found = append(found, fmt.Sprintf("%s policy %s: %s", tbl, pol, strings.Join(calls, ", ")))
		}
	}
	if err := rows.Err(); err != nil {
		return Check{Fail, name, err.Error(), ""}
	}
	if len(found) > 0 {
		return Check{Warn, name, "helpers evaluated once per row: " + strings.Join(found, "; "),
			"wrap each call as a sub-select, e.g. tenant_id = (select tablegate.current_tenant_id()); " +
				"for tenant + membership use tenant_id = (select id from tablegate.member_tenant); " +
				"tables of tablegate.enable_tenant_policies: call it again (see docs/tenant.md)"}
	}
	return Check{OK, name, fmt.Sprintf("%d polic(ies) of the served tables evaluate their helpers once per statement", policies), ""}
}

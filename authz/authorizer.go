package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/dbsqlc"
	"github.com/tablegate/tablegate/plugin"
	"github.com/tablegate/tablegate/rest"
)

// ErrConfig wraps every error [Claims] and [Memberships] return for a bad
// configuration.
var ErrConfig = errors.New("authz: invalid configuration")

// Config configures an [Authorizer]. The zero value (or nil) is valid:
// services allowed, keys "<table>.<operation>", tenant claim tenant_id, no
// approval gating.
type Config struct {
	// DenyServices makes service callers (secret keys, custom service
	// resolvers) go through the rules like everyone else; they hold no
	// claims, so only [Anyone] grants them anything. By default services
	// are allowed every permission, approval-gated ones included.
	DenyServices bool

	// OperationKey names the permission of a CRUD operation for
	// [Authorizer.ForOperation]. Nil uses "<table>.<operation>" with the
	// table as the resource names it ("todos.delete").
	OperationKey func(table string, op rest.Operation) string

	// Strict makes ForOperation fail (and so rest.NewResource with
	// PermissionsFromAuthorizer) for a served operation whose key has no
	// rule. By default such an operation carries no permission check and
	// row-level security alone decides.
	Strict bool

	// TenantClaim is the dotted path of the claim holding the caller's
	// active tenant, for [Tenant]. Default "tenant_id" (falling back to
	// app_metadata.tenant_id). It must pass plugin.ValidateClaimPath; keep
	// it equal to the database setting tablegate.tenant_claim() (see
	// plugin.SyncTenantClaim).
	TenantClaim string

	// Approvals gates permission keys behind an approval. Nil gates none.
	Approvals *ApprovalConfig
}

// ApprovalConfig mark permission keys as approval-gated (see
// docs/approvals.md). A caller whose rule grants a gated key still needs an
// approval by someone else holding the approver role: the first attempt
// opens a pending approval and answers 403 APPROVAL_REQUIRED with its id;
// once approved, the same request (same permission, table and key) passes
// once, or until the approval expires with Reusable.
type ApprovalConfig struct {
	// DB opens or reuses the pending approval in its own short transaction
	// bound to the same caller, so that it survives the refusal (the
	// request's own transaction rolls back). Required; the resources' own
	// DB is fine: the approval is recorded only after the request's
	// transaction has ended and released its connection (rest's
	// Decision.Then), so a refused request never waits for a second
	// connection while holding one.
	DB *db.DB

	// Permissions lists the gated permission keys. Each still needs a rule
	// in Rules saying who may ask ([SignedIn] for everyone signed in).
	Permissions []string

	// TTL is how long approvers have to decide a pending approval
	// (default 24 hours); a denial also holds until then.
	TTL time.Duration

	// ValidFor is how long an approval admits requests after it was
	// approved (default 1 hour).
	ValidFor time.Duration

	// Exempt, when set, lets callers it grants pass gated keys without an
	// approval (for example authz.Role("approver") for a demo; a strict
	// four-eyes setup leaves it nil).
	Exempt Rule

	// Reusable lets an approval admit every matching request until it
	// expires. By default an approval admits exactly one request: the one
	// that commits first spends it.
	Reusable bool

	// Timeout bounds the separate transaction that opens the approval,
	// including waiting for a turn (MaxConcurrent) and for a pooled
	// connection (default 5 seconds); past it the request answers 503
	// with Retry-After.
	Timeout time.Duration

	// MaxConcurrent bounds how many approvals this authorizer records at
	// once (default 2), so that a burst of gated refusals takes at most
	// that many connections from a shared pool; concurrent identical
	// attempts (same caller, permission, table and key) share one.
	MaxConcurrent int

	// MaxInFlight bounds how many requests under gated keys run at once
	// (default 4): rest admits them before opening their transactions
	// (rest.Admission), so a burst of gated requests — refused or not —
	// holds at most that many pooled connections and leaves the rest to
	// other callers. Waiting for a turn is bounded by Timeout (503).
	MaxInFlight int
}

// Defaults of [ApprovalConfig].
const (
	DefaultApprovalTTL      = 24 * time.Hour
	DefaultApprovalValidFor = time.Hour
	DefaultApprovalTimeout  = 5 * time.Second
	// DefaultApprovalMaxConcurrent is the default of
	// ApprovalConfig.MaxConcurrent.
	DefaultApprovalMaxConcurrent = 2
	// DefaultApprovalMaxInFlight is the default of
	// ApprovalConfig.MaxInFlight.
	DefaultApprovalMaxInFlight = 4
)

// source says where membership questions are answered.
type source uint8

const (
	fromClaims source = iota
	fromTable
)

// Authorizer is a rest.Authorizer over [Rules]; it also implements
// rest.OperationPermissions, so Config.PermissionsFromAuthorizer works.
// Build one with [Claims] or [Memberships]. It is safe for concurrent use.
type Authorizer struct {
	rules   Rules
	src     source
	opts    Config
	tenant  string
	opKey   func(string, rest.Operation) string
	gated   map[string]bool
	appr    ApprovalConfig
	queries *dbsqlc.Queries
	// apprTurns holds one token per approval being recorded
	// (MaxConcurrent); apprFlight merges identical attempts.
	apprTurns chan struct{}
	// gatedTurns holds one token per gated request in flight (MaxInFlight).
	gatedTurns chan struct{}
	apprFlight singleflight.Group
}

var (
	_ rest.Authorizer           = (*Authorizer)(nil)
	_ rest.OperationPermissions = (*Authorizer)(nil)
	_ rest.Admission            = (*Authorizer)(nil)
)

// Claims returns an authorizer that decides from the verified claims
// alone: [Role] reads claim roles, [Member] reads claim memberships (each
// falling back to app_metadata; never user_metadata). It touches the
// database only for approval-gated keys. Claims are as fresh as the token:
// a membership granted after the token was issued counts after the next
// refresh (use [Memberships] for immediate truth). opts may be nil.
func Claims(rules Rules, opts *Config) (*Authorizer, error) {
	return newAuthorizer(rules, opts, fromClaims)
}

// Memberships returns an authorizer whose [Member] rules read the
// tablegate.memberships table through the request's caller-bound
// transaction — immediate truth, no waiting for a token refresh. One
// query answers every membership question of a request or of a whole list
// page. [Role] still reads the claim roles. opts may be nil.
func Memberships(rules Rules, opts *Config) (*Authorizer, error) {
	return newAuthorizer(rules, opts, fromTable)
}

func newAuthorizer(rules Rules, opts *Config, src source) (*Authorizer, error) {
	a := &Authorizer{rules: make(Rules, len(rules)), src: src, queries: dbsqlc.New(), gated: map[string]bool{}}
	if opts != nil {
		a.opts = *opts
	}
	if err := a.opts.validate(); err != nil {
		return nil, err
	}
	for k, r := range rules {
		if k == "" {
			return nil, fmt.Errorf("%w: empty permission key", ErrConfig)
		}
		if r == nil {
			return nil, fmt.Errorf("%w: nil rule for %q", ErrConfig, k)
		}
		a.rules[k] = r
	}
	a.tenant = a.opts.TenantClaim
	if a.tenant == "" {
		a.tenant = "tenant_id"
	}
	a.opKey = a.opts.OperationKey
	if a.opKey == nil {
		a.opKey = func(table string, op rest.Operation) string { return table + "." + string(op) }
	}
	if ap := a.opts.Approvals; ap != nil {
		a.appr = *ap
		if a.appr.TTL == 0 {
			a.appr.TTL = DefaultApprovalTTL
		}
		if a.appr.ValidFor == 0 {
			a.appr.ValidFor = DefaultApprovalValidFor
		}
		if a.appr.Timeout == 0 {
			a.appr.Timeout = DefaultApprovalTimeout
		}
		if a.appr.MaxConcurrent == 0 {
			a.appr.MaxConcurrent = DefaultApprovalMaxConcurrent
		}
		a.apprTurns = make(chan struct{}, a.appr.MaxConcurrent)
		if a.appr.MaxInFlight == 0 {
			a.appr.MaxInFlight = DefaultApprovalMaxInFlight
		}
		a.gatedTurns = make(chan struct{}, a.appr.MaxInFlight)
		for _, k := range a.appr.Permissions {
			a.gated[k] = true
		}
	}
	return a, nil
}

// validate checks the configuration; errors wrap [ErrConfig].
func (c *Config) validate() error {
	if c.TenantClaim != "" {
		if err := plugin.ValidateClaimPath(c.TenantClaim); err != nil {
			return fmt.Errorf("%w: TenantClaim: %v", ErrConfig, err)
		}
	}
	if ap := c.Approvals; ap != nil {
		if ap.DB == nil {
			return fmt.Errorf("%w: ApprovalConfig.DB is required", ErrConfig)
		}
		if ap.TTL < 0 || ap.ValidFor < 0 || ap.Timeout < 0 || ap.MaxConcurrent < 0 || ap.MaxInFlight < 0 {
			return fmt.Errorf("%w: negative approval duration", ErrConfig)
		}
		for _, k := range ap.Permissions {
			if k == "" {
				return fmt.Errorf("%w: empty gated permission key", ErrConfig)
			}
		}
	}
	return nil
}

// ForOperation returns the permission key of a CRUD operation
// (OperationKey, default "<table>.<op>") when the rules hold that key, and
// "" (no permission check) otherwise — or an error with Config.Strict.
func (a *Authorizer) ForOperation(table string, op rest.Operation) (string, error) {
	key := a.opKey(table, op)
	if _, ok := a.rules[key]; ok {
		return key, nil
	}
	if a.opts.Strict {
		return "", fmt.Errorf("no rule for permission %q", key)
	}
	return "", nil
}

// Gated reports whether a permission key is approval-gated.
func (a *Authorizer) Gated(permission string) bool { return a.gated[permission] }

func (a *Authorizer) input(req *rest.AuthzRequest, row rest.Row) input {
	return input{req: req, row: row, claims: req.Caller.Claims(), tenant: a.tenant}
}

func ptr(in input) *input { return &in }

// nextRow returns the row as an update will leave it (the current row with
// the body's values over it), or nil when the request has no current row
// or no body.
func nextRow(req *rest.AuthzRequest) rest.Row {
	if req.Row == nil || len(req.Data) == 0 || req.Operation != rest.OpUpdate {
		return nil
	}
	next := make(rest.Row, len(req.Row)+len(req.Data))
	for k, v := range req.Row {
		next[k] = v
	}
	for k, v := range req.Data {
		next[k] = v
	}
	return next
}

func evalAll(r Rule, ins []*input, m memberFunc) bool {
	for _, in := range ins {
		if !r.eval(in, m) {
			return false
		}
	}
	return true
}

// Authorize decides one request (rest.Authorizer). For update, the rule
// must grant the permission for the current row and for the row with the
// body applied, so a write cannot move a row out of the caller's reach.
func (a *Authorizer) Authorize(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	if req.Caller.Actor().Type == authctx.KindService && !a.opts.DenyServices {
		return rest.Decision{Effect: rest.Allow, Reason: "service caller"}, nil
	}
	rule, ok := a.rules[req.Permission]
	if !ok {
		return deny("no rule for " + req.Permission), nil
	}
	gated := a.gated[req.Permission]
	asked := rule
	if gated && a.appr.Exempt != nil {
		asked = allRule{rule, a.appr.Exempt} // one query for both
	}
	ins := []*input{ptr(a.input(req, req.Row))}
	if next := nextRow(req); next != nil {
		// An update must be granted for the row as it is AND as it will
		// be: else an editor of tenant A moves a row into tenant B.
		ins = append(ins, ptr(a.input(req, next)))
	}
	m, err := a.members(ctx, req, ins, asked)
	if err != nil {
		return rest.Decision{}, err
	}
	for _, in := range ins {
		if !rule.eval(in, m) {
			return deny("rule refused " + req.Permission), nil
		}
	}
	if !gated {
		return rest.Allowed(), nil
	}
	if a.appr.Exempt != nil && evalAll(a.appr.Exempt, ins, m) {
		return rest.Decision{Effect: rest.Allow, Reason: "exempt from approval"}, nil
	}
	return a.approval(ctx, req)
}

// AuthorizeRows decides every row of a list page (rest.Authorizer): the
// membership questions of all rows are answered by one query
// ([Memberships]) or from the claims ([Claims]). Rows under an
// approval-gated key are dropped: a list cannot wait for an approval.
func (a *Authorizer) AuthorizeRows(ctx context.Context, req *rest.AuthzRequest, rows []rest.Row) ([]rest.Decision, error) {
	out := make([]rest.Decision, len(rows))
	if req.Caller.Actor().Type == authctx.KindService && !a.opts.DenyServices {
		for i := range out {
			out[i] = rest.Allowed()
		}
		return out, nil
	}
	rule, ok := a.rules[req.Permission]
	if !ok || a.gated[req.Permission] {
		return out, nil // zero Decision denies
	}
	ins := make([]input, len(rows))
	ptrs := make([]*input, len(rows))
	for i, row := range rows {
		ins[i] = a.input(req, row)
		ptrs[i] = &ins[i]
	}
	m, err := a.members(ctx, req, ptrs, rule)
	if err != nil {
		return nil, err
	}
	for i := range ins {
		if rule.eval(&ins[i], m) {
			out[i] = rest.Allowed()
		}
	}
	return out, nil
}

func deny(reason string) rest.Decision { return rest.Decision{Effect: rest.Deny, Reason: reason} }

// members returns the membership oracle for inputs: claims directly, or
// the table, asked once for every distinct question of every input.
func (a *Authorizer) members(ctx context.Context, req *rest.AuthzRequest, ins []*input, rule Rule) (memberFunc, error) {
	claims := req.Caller.Claims()
	if a.src == fromClaims {
		return func(q memberQ) bool { return claimMember(claims, q) }, nil
	}
	var qs []memberQ
	seen := map[string]bool{}
	for _, in := range ins {
		rule.ask(in, func(q memberQ) {
			k := q.key()
			if !seen[k] {
				seen[k] = true
				qs = append(qs, q)
			}
		})
	}
	none := func(memberQ) bool { return false }
	uid := req.Caller.Actor().ID
	if len(qs) == 0 || req.Caller.Actor().Type != authctx.KindUser || !isUUID(uid) {
		return none, nil
	}
	if req.DB == nil {
		return nil, errors.New("authz: AuthzRequest.DB is nil; the memberships authorizer needs the request's transaction")
	}
	// Flatten to (scope, id, role) triples; role "" asks for any role.
	var scopes, ids, roles []string
	var owner []int // triple → question
	for qi, q := range qs {
		if len(q.roles) == 0 {
			scopes, ids, roles, owner = append(scopes, q.scope), append(ids, q.id), append(roles, ""), append(owner, qi)
			continue
		}
		for _, r := range q.roles {
			scopes, ids, roles, owner = append(scopes, q.scope), append(ids, q.id), append(roles, r), append(owner, qi)
		}
	}
	hits, err := a.queries.MembershipMatch(ctx, req.DB, dbsqlc.MembershipMatchParams{
		UserID: uid, Scopes: scopes, ScopeIds: ids, Roles: roles,
	})
	if err != nil {
		return nil, fmt.Errorf("authz: membership check: %w", err)
	}
	held := map[string]bool{}
	for _, h := range hits {
		if i := int(h) - 1; i >= 0 && i < len(owner) {
			held[qs[owner[i]].key()] = true
		}
	}
	return func(q memberQ) bool { return held[q.key()] }, nil
}

func (q memberQ) key() string {
	k := q.scope + "\x00" + q.id
	for _, r := range q.roles {
		k += "\x00" + r
	}
	return k
}

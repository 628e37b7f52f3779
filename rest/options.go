package rest

import (
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// Defaults of [Config].
const (
	// DefaultLimit is the page size of a list without a limit parameter.
	DefaultLimit = 50
	// DefaultMaxLimit caps the limit parameter of a list.
	DefaultMaxLimit = 1000
	// DefaultMaxBodyBytes caps request bodies (1 MiB); larger bodies answer 413.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultCacheControl is the Cache-Control of responses to callers
	// with credentials ([Config.CacheControl]).
	DefaultCacheControl = "private, no-store"
)

// Config configures a [Resource]. The zero value serves every CRUD
// operation on every column of the table with no hooks and no
// permissions. A Config is read once by [NewResource]; changing it
// afterwards has no effect.
type Config struct {
	// Operations lists the CRUD operations served. Nil serves all five;
	// an operation not listed is not served (its method answers 405).
	Operations []Operation

	// Select lists the columns returned by every operation, in this order.
	// Nil selects every column of the table. Filters and order of a list
	// may only name selected columns.
	Select []string

	// Key names the key column addressed by /{key}. Empty uses the table's
	// single-column primary key; a table or view without one must set Key.
	Key string

	// ReadOnly lists columns a body may not set. Generated columns and
	// identity columns declared GENERATED ALWAYS are always read-only, and
	// the key column is read-only for update; every other column is
	// writable by default, including columns with a default such as
	// created_by uuid default auth.uid() or tenant_id default
	// tablegate.current_tenant_id(): the default applies only when the
	// body leaves the column out. List such columns here so that the
	// default always applies. A body naming a read-only or unknown column
	// answers 400.
	ReadOnly []string

	// Input maps create or update to a JSON
	// Schema the body must satisfy before the repository is touched. Build
	// one from a Go type with [MustSchemaFor], constrained with the
	// [SchemaTag] keywords (`tablegate:"minLength=3"`) or by editing the
	// result. Failures answer 400 naming the failing paths, never values.
	// The same schema describes the body in the OpenAPI document. Without
	// one, each value must have a JSON type its column takes.
	Input map[Operation]*jsonschema.Schema

	// Output maps an operation to the JSON Schema of its response when an
	// After hook reshapes it (for list: the item schema inside the page).
	// It documents the response for the OpenAPI and MCP adapters; responses
	// are not validated against it.
	Output map[Operation]*jsonschema.Schema

	// Permissions maps an operation to the permission key the [Authorizer]
	// checks before hooks run. See also PermissionsFromAuthorizer.
	Permissions map[Operation]string

	// PermissionsFromAuthorizer asks the authorizer's ForOperation (it must
	// implement [OperationPermissions]) for the key of every enabled CRUD
	// operation not listed in Permissions. Building fails if the authorizer
	// is nil or lacks ForOperation.
	PermissionsFromAuthorizer bool

	// Authorizer decides permissions. An operation or action with a
	// permission and no authorizer denies every caller.
	Authorizer Authorizer

	// Hooks holds the business-logic hooks.
	Hooks Hooks

	// Actions maps action names to custom operations built with
	// [DefineAction]. Names start with a letter, hold letters, digits and
	// '_' only, and are not a CRUD operation name.
	Actions map[string]*Action

	// Repository replaces the table repository, e.g. with one backed by
	// sqlc-generated queries. The table is still introspected for the
	// description and for body and query validation.
	Repository Repository

	// Caller returns the caller of an HTTP request. Nil reads the state
	// that authctx middleware stored in the request context
	// ([authctx.AuthFrom]); without one the caller is anon. An invalid
	// caller answers 401.
	Caller func(*http.Request) (authctx.Auth, error)

	// DefaultLimit is the page size without a limit parameter (default
	// [DefaultLimit]); MaxLimit caps the limit parameter (default
	// [DefaultMaxLimit]). A larger limit answers 400.
	DefaultLimit, MaxLimit int

	// MaxBodyBytes caps request bodies (default [DefaultMaxBodyBytes]).
	MaxBodyBytes int64

	// CacheControl is the Cache-Control of every response (problems
	// included) to a request that carries credentials (an Authorization,
	// Cookie or apikey header, or a caller other than anon); default
	// [DefaultCacheControl], so that no shared cache keeps one caller's
	// rows. An action's *Response may set its own; a Cache-Control already
	// on the response (the session refresh's) is kept. Every response also
	// carries Vary: Authorization, Cookie.
	CacheControl string

	// StatementTimeout is the time budget of each statement this
	// resource's operations and actions run (hooks included), and of each
	// pause a hook or action takes between statements while it holds the
	// request's transaction (at least one second), replacing
	// db.Config.StatementTimeout. It is
	// set inside the request's transaction in the same round trip as the
	// caller's claims. A statement over budget is cancelled by Postgres, a
	// transaction idle over budget is ended (its locks released, nothing
	// committed), and the request answers 503 with Retry-After. Zero uses
	// the DB's; negative sets none.
	StatementTimeout time.Duration

	// StatementTimeouts overrides StatementTimeout for single CRUD
	// operations or actions (keyed by action name), e.g. a longer budget
	// for an export action or a shorter one for list.
	StatementTimeouts map[Operation]time.Duration

	// FilterColumns, when not nil, lists the only selected columns a list
	// may filter and order by; any other answers 400 (the key column may
	// always order). List the columns an index serves, so that no caller
	// can ask for a scan of the whole table (an ilike over an unindexed
	// column). Nil allows every selected column. The description (OpenAPI,
	// MCP) advertises only these columns.
	FilterColumns []string

	// CursorKey seals list cursors (AES-256-GCM under a key derived from
	// it, so clients can neither read nor alter them). Empty uses a random key
	// drawn when the resource is built: cursors then stay valid only on
	// this instance until it restarts. Set the same key on every instance
	// behind a load balancer.
	CursorKey []byte

	// AllowWithoutRLS serves a table or view that row-level security does
	// not protect, for the rare table every caller may read (a public
	// catalog). Without it [NewResource] refuses such a table with an
	// error wrapping [db.ErrNoRLS] that names the SQL to fix it (see
	// [db.CheckRLS]). With it the resource logs a warning each time it is
	// built, and its description says so ([Description.WithoutRLS]): the
	// OpenAPI document marks its operations with x-service-rls: false.
	AllowWithoutRLS bool

	// GrantRoles are the roles whose grants [NewResource] checks for each
	// served operation, logging a warning per missing privilege: the
	// roles the resource's callers run as. Nil checks authenticated (the
	// role of users); an empty list checks none. Only "anon" and
	// "authenticated" may be listed (service_role bypasses RLS and is not
	// checked).
	GrantRoles []string

	// Logger receives unexpected errors and panics with their request id,
	// and the warnings of [NewResource]: a table served with
	// AllowWithoutRLS, and each served operation whose privilege a role of
	// GrantRoles lacks (every request as that role would answer 403).
	// Nil uses slog.Default().
	Logger *slog.Logger

	// Problems renders error bodies (type URL base).
	Problems problem.Writer
}

// SchemaFor returns the JSON Schema inferred from the Go type T, for
// [Config.Input], [Config.Output] and action schemas, or the error that
// says why T cannot be described. Inference is github.com/google/jsonschema-go's
// (jsonschema.For): struct fields by their json names, required unless
// omitempty or omitzero, no other properties allowed, a `jsonschema` tag
// as the description. Validation keywords come from the [SchemaTag]
// (`tablegate:"minLength=3"`). The result is the caller's: change it
// (s.Properties["name"].MinLength = jsonschema.Ptr(3)) for anything a tag
// cannot say; the resource validates bodies against, and describes, that
// very schema.
func SchemaFor[T any]() (*jsonschema.Schema, error) {
	s, err := inferSchema(reflect.TypeFor[T]())
	if err != nil {
		return nil, fmt.Errorf("rest: SchemaFor: %w", err)
	}
	return s, nil
}

// MustSchemaFor is [SchemaFor] for package-level declarations: it panics
// if T cannot be described (a programming error, found when the program
// starts).
func MustSchemaFor[T any]() *jsonschema.Schema {
	s, err := SchemaFor[T]()
	if err != nil {
		panic(err.Error())
	}
	return s
}

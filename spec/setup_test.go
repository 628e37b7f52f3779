package spec_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixtureSQL has a table with one column of every JSON shape the
// repository serves, under RLS, and a second table with a text key.
const fixtureSQL = `
create table todos (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  title text not null check (length(title) between 1 and 200),
  done boolean not null default false,
  priority int,
  estimate numeric(10,2),
  seq bigint generated always as identity,
  due_at timestamptz,
  created_at timestamptz not null default now(),
  local_at timestamp,
  due_on date,
  meta jsonb,
  tags text[] not null default '{}',
  price money,
  code varchar(12) unique,
  ratio double precision,
  secret text
);
alter table todos enable row level security;
grant select, insert, update, delete on todos to authenticated, anon;
create policy todos_read on todos for select using (owner_id = auth.uid());
create policy todos_insert on todos for insert to authenticated with check (owner_id = auth.uid());
create policy todos_update on todos for update to authenticated using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create policy todos_delete on todos for delete to authenticated using (owner_id = auth.uid());

create table notes (
  slug text primary key,
  body text not null,
  n bigint
);
alter table notes enable row level security;
grant select on notes to authenticated, anon;
create policy notes_read on notes for select using (true);
insert into notes values ('hello', 'Hello', 9007199254740993);
`

const alice = "11111111-1111-1111-1111-111111111111"

// testCaller reads the caller from X-Test-User: a user id, "anon", "invalid" or "".
func testCaller(r *http.Request) (authctx.Auth, error) {
	switch h := r.Header.Get("X-Test-User"); h {
	case "", "anon":
		return authctx.Anon(authctx.ReasonNone), nil
	case "invalid":
		return authctx.Invalid(authctx.ReasonToken, nil), nil
	default:
		return authctx.NewUser(authctx.Claims{"sub": h, "role": "authenticated"}, "token-not-used", nil), nil
	}
}

type completeIn struct {
	Note string `json:"note,omitempty" jsonschema:"a note kept with the completion"`
}

type completeOut struct {
	ID   string `json:"id"`
	Done bool   `json:"done"`
	Note string `json:"note"`
}

type exportQuery struct {
	Limit int  `json:"limit,omitempty"`
	Done  bool `json:"done,omitempty"`
}

func viewOf(row rest.Row) noteView {
	body, _ := row["body"].(string)
	slug, _ := row["slug"].(string)
	return noteView{Slug: slug, Length: len(body)}
}

// noteView is the reshaped get and list item of notes.
type noteView struct {
	Slug   string `json:"slug"`
	Length int    `json:"length"`
}

// allowAll is an authorizer that admits everything and explains its keys.
type allowAll struct{}

func (allowAll) Authorize(context.Context, *rest.AuthzRequest) (rest.Decision, error) {
	return rest.Allowed(), nil
}

func (allowAll) AuthorizeRows(_ context.Context, _ *rest.AuthzRequest, rows []rest.Row) ([]rest.Decision, error) {
	out := make([]rest.Decision, len(rows))
	for i := range out {
		out[i] = rest.Allowed()
	}
	return out, nil
}

func (allowAll) DescribePermission(key string) string {
	return "Granted to members holding " + key + "."
}

func todoActions() map[string]*rest.Action {
	return map[string]*rest.Action{
		"complete": rest.DefineAction(rest.ActionDef[completeIn, rest.None, completeOut]{
			Method: "POST", Path: "/{id}/complete", Permission: "todos.complete",
			Summary: "Mark a todo done", Description: "Sets done and records the note.",
			Emits: []string{"todo.completed"},
			Handler: func(c *rest.Ctx, in rest.ActionInput[completeIn, rest.None]) (completeOut, error) {
				out := completeOut{Note: in.Data.Note}
				err := c.DB.QueryRow(c, `update todos set done = true where id = $1 returning id::text, done`, in.ID).Scan(&out.ID, &out.Done)
				return out, err
			},
		}),
		"export": rest.DefineAction(rest.ActionDef[rest.None, exportQuery, []string]{
			Method: "GET", Path: "/export", Summary: "Export titles",
			Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, exportQuery]) ([]string, error) {
				rows, err := c.DB.Query(c, `select title from todos where done = $1 order by title`, in.Query.Done)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				out := []string{}
				for rows.Next() {
					var s string
					if err := rows.Scan(&s); err != nil {
						return nil, err
					}
					out = append(out, s)
				}
				return out, rows.Err()
			},
		}),
		"archive": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
			Method: "DELETE", Path: "/{id}/archive", Deprecated: true, Summary: "Archive a todo (use delete)",
			Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
				return rest.None{}, nil
			},
		}),
	}
}

// bundle is a migrated database with the fixture, its resources and API.
type bundle struct {
	pool *pgxpool.Pool
	db   *db.DB
	res  map[string]*rest.Resource
	api  *spec.API
}

func setup(t testing.TB) *bundle {
	t.Helper()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	d := db.New(pool, nil)
	res, err := rest.NewResources(context.Background(), d, map[string]*rest.Config{
		"todos": {
			Caller:      testCaller,
			Authorizer:  allowAll{},
			Permissions: map[rest.Operation]string{rest.OpUpdate: "todos.update", rest.OpDelete: "todos.delete"},
			Select:      []string{"id", "owner_id", "title", "done", "priority", "estimate", "seq", "due_at", "created_at", "local_at", "due_on", "meta", "tags", "price", "code", "ratio"},
			ReadOnly:    []string{"owner_id"},
			Actions:     todoActions(),
			CursorKey:   []byte("0123456789abcdef0123456789abcdef"),
		},
		"notes": {
			Caller:     testCaller,
			Operations: []rest.Operation{rest.OpList, rest.OpGet},
			Output: map[rest.Operation]*jsonschema.Schema{
				rest.OpGet:  rest.MustSchemaFor[noteView](),
				rest.OpList: rest.MustSchemaFor[noteView](),
			},
			Hooks: rest.Hooks{
				AfterGetFunc: func(c *rest.Ctx, row rest.Row) (any, error) { return viewOf(row), nil },
				AfterListFunc: func(c *rest.Ctx, page *rest.Page) (any, error) {
					items := make([]noteView, len(page.Items))
					for i, row := range page.Items {
						items[i] = viewOf(row)
					}
					return map[string]any{"items": items, "next_cursor": page.NextCursor}, nil
				},
			},
			MaxLimit: 100, DefaultLimit: 20,
			CursorKey: []byte("0123456789abcdef0123456789abcdef"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := spec.DefineAPI(apiOptions(res))
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{pool: pool, db: d, res: res, api: api}
}

func apiOptions(res map[string]*rest.Resource) *spec.Config {
	return &spec.Config{
		Info:       spec.Info{Title: "Todo API", Version: "1.4.0", Description: "Todos with tenants."},
		BasePath:   "/api",
		Authorizer: allowAll{},
		Resources:  res,
		Allow:      map[string][]authctx.Allow{"notes": {authctx.AllowUser, authctx.AllowAnon}},
		ProjectURL: "https://abcdefghijklmnop.supabase.co",
	}
}

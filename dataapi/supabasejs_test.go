package dataapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/internal/nodetest"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestGoAPISupabaseJSHooks mounts the data API from Go beside a resolver
// verifying tokens against a real JWKS server, and checks with the real
// supabase-js that .insert() into a declared table runs its BeforeCreate
// hook per row and its permission, in the write's transaction.
func TestGoAPISupabaseJSHooks(t *testing.T) {
	nodetest.Require(t)
	rv, token := jwksResolver(t)
	b := newBundle(t)
	hookRuns := 0
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Select:      []string{"id", "title", "done"},
		Operations:  []rest.Operation{rest.OpList, rest.OpCreate},
		Permissions: map[rest.Operation]string{rest.OpCreate: "todos.create"},
		Authorizer: rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
			if req.Data["title"] == "forbidden" {
				return rest.Denied(), nil
			}
			return rest.Allowed(), nil
		}),
		Hooks: rest.Hooks{BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
			hookRuns++
			if data["title"] == "bad" {
				return nil, problem.New(problem.KindUnprocessable, "titles may not be bad")
			}
			data["title"] = strings.ToUpper(data["title"].(string)) + " (hooked)"
			return data, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(context.Background(), &Config{DB: b.db, Tables: map[string]*Table{"todos": {Resource: res}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/rest/v1/", http.StripPrefix("/rest/v1", rv.Middleware(api)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var got map[string]struct {
		Data  json.RawMessage `json:"data"`
		Error *struct{ Code, Message string }
	}
	nodetest.Run(t, 60*time.Second, "data-api-hooks.mjs", map[string]any{"url": srv.URL, "key": "sb_publishable_x", "token": token}, &got)
	if s := got["hooked"]; s.Error != nil || string(s.Data) != `[{"title":"ONE (hooked)"},{"title":"TWO (hooked)"}]` {
		t.Errorf("hooked insert: %s %+v", s.Data, s.Error)
	}
	if s := got["hook_refuses"]; s.Error == nil || s.Error.Message != "titles may not be bad" {
		t.Errorf("hook refusal: %+v", s.Error)
	}
	if s := got["permission_denied"]; s.Error == nil || s.Error.Code != "PERMISSION_DENIED" {
		t.Errorf("permission: %+v", s.Error)
	}
	if s := got["read_back"]; string(s.Data) != `[{"title":"ONE (hooked)"},{"title":"TWO (hooked)"}]` {
		t.Errorf("read back: %s %+v", s.Data, s.Error)
	}
	if hookRuns != 3 {
		t.Errorf("BeforeCreate ran %d times, want 3 (two rows, then the refused one; the denied row stops at the permission)", hookRuns)
	}
}

// jwksResolver is a resolver verifying tokens against a real JWKS server,
// and a token of alice's signed by its key.
func jwksResolver(t *testing.T) (*authctx.Resolver, string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	point, err := priv.PublicKey.Bytes() // 0x04 | X | Y, 32 bytes each
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	set := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"k1","x":%q,"y":%q}]}`,
		b64(point[1:33]), b64(point[33:]))
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, set) }))
	t.Cleanup(jwks.Close)
	rv, err := authctx.New(context.Background(), &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKSURL: jwks.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	claims := jwt.MapClaims{"sub": alice, "role": "authenticated", "aud": "authenticated",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = "k1"
	token, err := tok.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	return rv, token
}

// TestGoAPISupabaseJSAfterHooks checks with the real supabase-js that a
// declared table's After hooks shape what .insert().select(),
// .update().select() and .select() receive, that an approval reaches the
// client as APPROVAL_REQUIRED naming it, and that .rpc() of a STABLE
// function runs read-only (PostgREST's 25006 error), as .rpc(…, {get:
// true}) of a writing function does, while .rpc() of a VOLATILE one
// writes.
func TestGoAPISupabaseJSAfterHooks(t *testing.T) {
	nodetest.Require(t)
	rv, token := jwksResolver(t)
	b := newBundle(t)
	b.exec(rpcFixtureSQL)
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Select:      []string{"id", "title", "done"},
		Operations:  rest.CRUD(),
		Permissions: map[rest.Operation]string{rest.OpCreate: "todos.create"},
		Authorizer: rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
			if req.Data["title"] == "wait" {
				return rest.Decision{Effect: rest.NeedsApproval, ApprovalID: "ap-7"}, nil
			}
			return rest.Allowed(), nil
		}),
		Hooks: rest.Hooks{
			AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				return map[string]any{"title": row["title"], "via": "after-create"}, nil
			},
			AfterUpdateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				return map[string]any{"title": row["title"], "done": row["done"], "via": "after-update"}, nil
			},
			AfterListFunc: func(c *rest.Ctx, page *rest.Page) (any, error) {
				for _, it := range page.Items {
					it["listed"] = true
				}
				return page, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(context.Background(), &Config{DB: b.db, Tables: map[string]*Table{"todos": {Resource: res}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/rest/v1/", http.StripPrefix("/rest/v1", rv.Middleware(api)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var got map[string]struct {
		Data  json.RawMessage `json:"data"`
		Error *struct{ Code, Message, Details string }
	}
	nodetest.Run(t, 60*time.Second, "data-api-after.mjs", map[string]any{"url": srv.URL, "key": "sb_publishable_x", "token": token}, &got)
	want := map[string]string{
		"insert":          `[{"title":"one","via":"after-create"},{"title":"two","via":"after-create"}]`,
		"update":          `[{"title":"one","done":true,"via":"after-update"}]`,
		"list":            `[{"title":"one","done":true,"listed":true},{"title":"two","done":false,"listed":true}]`,
		"rpc_volatile":    `1`,
		"rpc_stable_read": `5`,
	}
	for step, w := range want {
		if s := got[step]; s.Error != nil || !sameJSON(t, string(s.Data), w) {
			t.Errorf("%s: %s %+v, want %s", step, s.Data, s.Error, w)
		}
	}
	if s := got["approval"]; s.Error == nil || s.Error.Code != "APPROVAL_REQUIRED" || s.Error.Details != "permission todos.create, approval ap-7" {
		t.Errorf("approval: %+v", s.Error)
	}
	for _, step := range []string{"rpc_stable_write", "rpc_get_write"} {
		if s := got[step]; s.Error == nil || s.Error.Code != "25006" {
			t.Errorf("%s: %s %+v", step, s.Data, s.Error)
		}
	}
}

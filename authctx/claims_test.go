package authctx

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// AppClaims is a Go claims type: app_metadata is described, so it
// replaces the payload's object (unlisted keys stripped).
type AppClaims struct {
	Plan        string `json:"plan,omitempty"`
	AppMetadata struct {
		TenantID string `json:"tenant_id"`
	} `json:"app_metadata"`
}

func payload() Claims {
	var c Claims
	_ = json.Unmarshal([]byte(`{"sub":"u1","exp":4102444800,"role":"authenticated",
	  "app_metadata":{"provider":"email","providers":["email"],"tenant_id":"t1"},
	  "user_metadata":{"name":"Zoë","roles":["admin"],"memberships":[{"scope":"org","id":"o1","roles":["owner"]}]}}`), &c)
	return c
}

func TestClaimsOfGoTypeMergesOneLevel(t *testing.T) {
	t.Parallel()
	cs, err := ClaimsOf[AppClaims]()
	if err != nil {
		t.Fatal(err)
	}
	merged, err := cs.Apply(payload())
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if merged["sub"] != "u1" || merged["exp"] != float64(4102444800) || merged["role"] != "authenticated" {
		t.Errorf("JWT claims did not stay: %v", merged)
	}
	want := map[string]any{"tenant_id": "t1"}
	if !reflect.DeepEqual(merged["app_metadata"], want) {
		t.Errorf("app_metadata = %v, want the schema output %v", merged["app_metadata"], want)
	}
	if _, ok := merged["user_metadata"]; !ok {
		t.Errorf("unlisted top-level claim user_metadata was dropped")
	}
	a := NewUser(merged, "tok", nil)
	typed, err := TypedClaims[AppClaims](a)
	if err != nil || typed.AppMetadata.TenantID != "t1" {
		t.Errorf("TypedClaims = %+v, %v", typed, err)
	}
	// Missing required nested field: the path is named.
	p := payload()
	delete(p["app_metadata"].(map[string]any), "tenant_id")
	_, err = cs.Apply(p)
	var ce *ClaimsError
	if !errors.As(err, &ce) || len(ce.Errors) != 1 || ce.Errors[0].Path != "/app_metadata/tenant_id" {
		t.Fatalf("err %v, want one failure at /app_metadata/tenant_id", err)
	}
}

func TestClaimsJSONSchemaLooseStrictDefaults(t *testing.T) {
	t.Parallel()
	loose, err := ClaimsJSONSchema([]byte(`{"type":"object","properties":{
	  "app_metadata":{"type":"object","additionalProperties":true,"properties":{"tier":{"type":"string","default":"free"}}},
	  "flags":{"type":"array","items":{"type":"string"},"default":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := loose.Apply(payload())
	if err != nil {
		t.Fatal(err)
	}
	am := merged["app_metadata"].(map[string]any)
	if am["provider"] != "email" || am["tenant_id"] != "t1" || am["tier"] != "free" {
		t.Errorf("loose object lost keys or default: %v", am)
	}
	if !reflect.DeepEqual(merged["flags"], []any{}) {
		t.Errorf("default [] not filled: %v", merged["flags"])
	}

	strict, err := ClaimsJSONSchema([]byte(`{"type":"object","properties":{
	  "app_metadata":{"type":"object","additionalProperties":false,"properties":{"tenant_id":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = strict.Apply(payload())
	var ce *ClaimsError
	if !errors.As(err, &ce) {
		t.Fatalf("strict object accepted unlisted keys")
	}
	paths := []string{}
	for _, f := range ce.Errors {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "/app_metadata/provider,/app_metadata/providers" {
		t.Errorf("paths %v", paths)
	}
}

func TestClaimsErrorsNameNoValues(t *testing.T) {
	t.Parallel()
	cs := StandardClaimsSchema()
	p := payload()
	p["tenant_id"] = "secret-tenant-value"
	p["roles"] = []any{"ok", 12345}
	p["memberships"] = []any{map[string]any{"scope": "org", "id": "o1"}}
	_, err := cs.Apply(p)
	var ce *ClaimsError
	if !errors.As(err, &ce) {
		t.Fatalf("no ClaimsError: %v", err)
	}
	got := map[string]bool{}
	for _, f := range ce.Errors {
		got[f.Path] = true
	}
	for _, want := range []string{"/tenant_id", "/roles/1", "/memberships/0/roles"} {
		if !got[want] {
			t.Errorf("missing failure path %s in %v", want, ce.Errors)
		}
	}
	b, _ := json.Marshal(ce.Errors)
	msg := err.Error() + string(b)
	for _, leak := range []string{"secret-tenant-value", "12345"} {
		if strings.Contains(msg, leak) {
			t.Errorf("error leaks value %q: %s", leak, msg)
		}
	}
}

func TestStandardClaimsNeverFromUserMetadata(t *testing.T) {
	t.Parallel()
	merged, err := StandardClaimsSchema().Apply(payload()) // roles/memberships only in user_metadata
	if err != nil {
		t.Fatal(err)
	}
	sc, err := TypedClaims[StandardClaims](NewUser(merged, "t", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Roles) != 0 || len(sc.Memberships) != 0 || sc.Roles == nil || sc.Memberships == nil {
		t.Errorf("roles/memberships must default to empty, never come from user_metadata: %+v", sc)
	}
	if merged.TenantID() != "t1" {
		t.Errorf("TenantID falls back to app_metadata.tenant_id: %q", merged.TenantID())
	}
	p := payload()
	p["tenant_id"] = "33333333-3333-4333-8333-333333333333"
	p["roles"] = []any{"editor"}
	p["memberships"] = []any{map[string]any{"scope": "org", "id": "o1", "roles": []any{"owner"}}}
	merged, err = StandardClaimsSchema().Apply(p)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ = TypedClaims[StandardClaims](NewUser(merged, "t", nil))
	if sc.TenantID != p["tenant_id"] || sc.Roles[0] != "editor" || sc.Memberships[0].Roles[0] != "owner" {
		t.Errorf("typed standard claims %+v", sc)
	}
}

type Profile struct {
	Name string `json:"name"`
}

func TestUserMetadataProfile(t *testing.T) {
	t.Parallel()
	ps := MustClaimsOf[Profile]()
	b := setup(t, func(c *Config) { c.UserMetadata = ps })
	a := b.rv.Resolve(bearerReq(b.token(map[string]any{"user_metadata": map[string]any{"name": "Zoë", "avatar": "x"}}))).Auth
	prof, ok := ProfileAs[Profile](a)
	if !ok || prof.Name != "Zoë" {
		t.Fatalf("profile %+v %v", prof, ok)
	}
	if m := a.User.Profile.(map[string]any); len(m) != 1 {
		t.Errorf("profile keeps only described keys: %v", m)
	}
	if !a.Actor().Anonymous && a.User.Profile == nil {
		t.Errorf("session lacks the profile")
	}
	// Profile failing its schema: still a user, no profile.
	a = b.rv.Resolve(bearerReq(b.token(map[string]any{"user_metadata": map[string]any{"name": 7}}))).Auth
	if a.Kind != KindUser || a.User.Profile != nil {
		t.Errorf("bad profile: %s %v", a.Kind, a.User.Profile)
	}
}

func TestCallerCarriesClaimsJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Claims = StandardClaimsSchema() })
	a := b.rv.Resolve(bearerReq(b.token(map[string]any{"is_anonymous": true}))).Auth
	ctx := a
	if ctx.Actor().Type != KindUser || ctx.Actor().ID != testUserID || !ctx.Actor().Anonymous {
		t.Errorf("actor %+v", ctx.Actor())
	}
	var back map[string]any
	if err := json.Unmarshal(ctx.DBCaller().Claims(), &back); err != nil {
		t.Fatalf("ClaimsJSON: %v", err)
	}
	if back["sub"] != testUserID || !reflect.DeepEqual(back["roles"], []any{}) {
		t.Errorf("ClaimsJSON is not the merged claims: %s", ctx.DBCaller().Claims())
	}
	if !a.Actor().Anonymous {
		t.Errorf("Actor().Anonymous false for an anonymous sign-in")
	}
	// Without a schema the JSON is the token payload itself.
	b2 := setup(t, nil)
	a = b2.rv.Resolve(bearerReq(b2.token(nil))).Auth
	if a.DBCaller().Claims() == nil || a.Actor().Anonymous {
		t.Errorf("no cached claims JSON / wrong anonymous flag")
	}
	if c := Service("default"); c.Actor().Type != KindService || c.Actor().ID != "default" {
		t.Errorf("service context %+v", c)
	}
	if c := Invalid(ReasonToken, nil); c.Actor().Type != KindAnon || c.Claims() != nil {
		t.Errorf("invalid context %+v", c)
	}
}

package plugin_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/plugin"
)

func TestActor(t *testing.T) {
	t.Parallel()
	a := plugin.NewActor(nil)
	if w, ro := a.Columns(); !slices.Equal(w, []string{"created_by", "updated_by"}) || !slices.Equal(ro, w) {
		t.Fatalf("columns %v %v", w, ro)
	}
	create := func(a *plugin.Actor, c authctx.Auth, data map[string]any) map[string]any {
		t.Helper()
		out, err := a.BeforeCreate(c, data)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	update := func(a *plugin.Actor, c authctx.Auth, data map[string]any) map[string]any {
		t.Helper()
		out, err := a.BeforeUpdate(c, data)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	full := userCtx(authctx.Claims{"sub": userA1})
	guest := userCtx(authctx.Claims{"sub": guestA, "is_anonymous": true})

	body := map[string]any{"title": "x", "created_by": "forged", "updated_by": "forged"}
	got := create(a, full, body)
	if !maps.Equal(got, map[string]any{"title": "x", "created_by": userA1, "updated_by": userA1}) {
		t.Fatalf("create: %v", got)
	}
	if body["created_by"] != "forged" {
		t.Fatal("input modified")
	}
	if got := create(a, guest, nil); got["created_by"] != guestA {
		t.Fatalf("guest create: %v", got)
	}
	if got := create(a, service, map[string]any{}); got["created_by"] != "svc" || got["updated_by"] != "svc" {
		t.Fatalf("service create: %v", got)
	}
	if got := create(a, noSession, map[string]any{"created_by": "forged"}); got["created_by"] != nil || len(got) != 2 {
		t.Fatalf("no session create: %v", got)
	}
	got = update(a, full, map[string]any{"title": "y", "created_by": "forged", "updated_by": "forged"})
	if !maps.Equal(got, map[string]any{"title": "y", "updated_by": userA1}) {
		t.Fatalf("update: %v", got)
	}

	only := plugin.NewActor(&plugin.ActorConfig{CreatedBy: "author", UpdatedBy: plugin.NoColumn,
		ServiceValueFunc: func(string) any { return nil }})
	if w, _ := only.Columns(); !slices.Equal(w, []string{"author"}) {
		t.Fatalf("columns %v", w)
	}
	if got := create(only, service, nil); !maps.Equal(got, map[string]any{"author": nil}) {
		t.Fatalf("service with nil value: %v", got)
	}
	if got := update(only, full, map[string]any{"author": "forged", "t": 1}); !maps.Equal(got, map[string]any{"t": 1}) {
		t.Fatalf("update without updated_by: %v", got)
	}
}

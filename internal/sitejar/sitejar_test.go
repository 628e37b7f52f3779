package sitejar_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/tablegate/tablegate/internal/sitejar"
)

func TestApply(t *testing.T) {
	t.Parallel()
	start := []*http.Cookie{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}, {Name: "c", Value: "3"}}
	w := httptest.NewRecorder()
	http.SetCookie(w, &http.Cookie{Name: "a", Value: "new"})             // replaced, moves last
	http.SetCookie(w, &http.Cookie{Name: "b", Value: "x", MaxAge: -1})   // Max-Age=0: deleted
	http.SetCookie(w, &http.Cookie{Name: "c", Value: ""})                // empty: deleted
	http.SetCookie(w, &http.Cookie{Name: "d", Value: "4", MaxAge: 3600}) // added
	got := sitejar.Apply(start, w.Header())
	if names := sitejar.Names(got); !slices.Equal(names, []string{"a", "d"}) || got[0].Value != "new" || got[1].Value != "4" {
		t.Fatalf("jar %v", names)
	}
	if len(start) != 3 || start[0].Value != "1" {
		t.Fatalf("Apply changed its input: %v", sitejar.Names(start))
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	r := sitejar.Request("POST", "https://app.example.com/auth/sign-in", []*http.Cookie{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}})
	if r.Method != "POST" || r.Host != "app.example.com" || r.Header.Get("Sec-Fetch-Site") != "same-origin" || r.Header.Get("Cookie") != "a=1; b=2" {
		t.Fatalf("request %s %s %v", r.Method, r.Host, r.Header)
	}
}

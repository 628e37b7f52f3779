package authflow_test

import (
	"fmt"
	"net/http"

	"github.com/tablegate/tablegate/authctx/authflow"
)

// Serve the sign-in and sign-out routes of a server-rendered app.
func ExampleNew() {
	flows, err := authflow.New(&authflow.Config{
		ProjectURL:     "https://abcdefghijklmnopqrst.supabase.co",
		PublishableKey: "sb_publishable_…",
		SiteURL:        "https://app.example.com",
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", flows.Handler())

	fmt.Println(flows.CookieName())
	fmt.Println(flows.CallbackURL())
	for _, next := range []string{"/account", "//evil.example.net", "https://app.example.com/x"} {
		target, ok := flows.SafeRedirect(next)
		fmt.Println(target, ok)
	}
	// Output:
	// sb-abcdefghijklmnopqrst-auth-token
	// https://app.example.com/auth/callback
	// https://app.example.com/account true
	// https://app.example.com/ false
	// https://app.example.com/x true
}

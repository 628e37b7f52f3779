// Package authflow_test checks tablegate's sign-in flows (package
// authctx/authflow) against the real @supabase/ssr and auth-js in node:
// a flow either side starts, the other finishes.
package authflow_test

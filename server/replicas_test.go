package server

import (
	"strings"
	"testing"
)

func TestReplicaURLs(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == envReplicaURLs {
				return v
			}
			return ""
		}
	}
	got, err := replicaURLs(env(" postgres://a/x , postgres://b/x"), []string{"postgres://c/x"})
	if err != nil || len(got) != 2 || got[0] != "postgres://a/x" || got[1] != "postgres://b/x" {
		t.Fatalf("env list: %q, %v", got, err)
	}
	if got, err := replicaURLs(env(""), []string{"postgres://c/x"}); err != nil || len(got) != 1 || got[0] != "postgres://c/x" {
		t.Fatalf("config list: %q, %v", got, err)
	}
	if got, err := replicaURLs(env(""), nil); err != nil || len(got) != 0 {
		t.Fatalf("none: %q, %v", got, err)
	}
	if _, err := replicaURLs(env("postgres://a/x,,postgres://b/x"), nil); err == nil || !strings.Contains(err.Error(), "DATABASE_REPLICA_URLS: entry 2 is empty") {
		t.Fatalf("empty env entry: %v", err)
	}
	if _, err := replicaURLs(env(""), []string{" "}); err == nil || !strings.Contains(err.Error(), "read_replicas[0] is empty") {
		t.Fatalf("empty config entry: %v", err)
	}
}

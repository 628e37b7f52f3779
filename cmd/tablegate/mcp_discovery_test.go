package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/mcpdiscovery"
)

// checkMCPDiscovery follows an MCP 401 challenge as an MCP client does:
// WWW-Authenticate names resource_metadata (RFC 9728), and that document
// names the /mcp resource of base and the authorization server.
func checkMCPDiscovery(t *testing.T, challenge, base, authServer string) {
	t.Helper()
	want := `resource_metadata="` + base + mcpdiscovery.Path + `"`
	if !strings.HasPrefix(challenge, "Bearer") || !strings.Contains(challenge, want) {
		t.Fatalf("WWW-Authenticate %q lacks %s", challenge, want)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(base + mcpdiscovery.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &md) != nil {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	if md.Resource != base+"/mcp" || strings.Join(md.BearerMethods, ",") != "header" {
		t.Errorf("metadata %s", body)
	}
	if authServer != "" && (len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != authServer) {
		t.Errorf("authorization_servers %v, want [%s]", md.AuthorizationServers, authServer)
	}
}

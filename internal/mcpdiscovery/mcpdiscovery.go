// Package mcpdiscovery serves the OAuth protected resource metadata
// (RFC 9728) of tablegate's MCP endpoint /mcp, which MCP clients find
// through the endpoint's 401 challenges.
package mcpdiscovery

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Path is where the OAuth protected resource metadata (RFC
// 9728) of the MCP endpoint /mcp is served: the well-known prefix, then
// the resource's path.
const Path = "/.well-known/oauth-protected-resource/mcp"

// Handler returns the absolute URL MCP's 401 challenges name as
// resource_metadata and the handler of that document, for the endpoint
// base+"/mcp". authServer is the authorization server that issues the
// Bearer tokens (Supabase Auth's {project}/auth/v1); empty lists none.
func Handler(base, authServer string) (string, http.Handler) {
	base = strings.TrimRight(base, "/")
	md := &oauthex.ProtectedResourceMetadata{
		Resource:               base + "/mcp",
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "tablegate MCP tools",
	}
	if authServer != "" {
		md.AuthorizationServers = []string{strings.TrimRight(authServer, "/")}
	}
	return base + Path, auth.ProtectedResourceMetadataHandler(md)
}

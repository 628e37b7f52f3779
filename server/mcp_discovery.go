package server

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// mcpMetadataPath is where the OAuth protected resource metadata (RFC
// 9728) of the MCP endpoint /mcp is served: the well-known prefix, then
// the resource's path.
const mcpMetadataPath = "/.well-known/oauth-protected-resource/mcp"

// mcpDiscovery returns the absolute URL MCP's 401 challenges name as
// resource_metadata and the handler of that document, for the endpoint
// base+"/mcp". authServer is the authorization server that issues the
// Bearer tokens (Supabase Auth's {project}/auth/v1); empty lists none.
func mcpDiscovery(base, authServer string) (string, http.Handler) {
	base = strings.TrimRight(base, "/")
	md := &oauthex.ProtectedResourceMetadata{
		Resource:               base + "/mcp",
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "tablegate MCP tools",
	}
	if authServer != "" {
		md.AuthorizationServers = []string{strings.TrimRight(authServer, "/")}
	}
	return base + mcpMetadataPath, auth.ProtectedResourceMetadataHandler(md)
}

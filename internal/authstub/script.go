package authstub

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// HookFunc answers a request in place of the server: an error the test
// needs, slowness, a body GoTrue would never send. It may call next to let
// the server answer (after a delay, say). The request's body can be read
// again by next.
type HookFunc func(w http.ResponseWriter, r *http.Request, next http.Handler)

// Call is one request the server received, recorded when
// [Config.RecordCalls] is set.
type Call struct {
	Method string
	Path   string // under /auth/v1, e.g. "/token"
	Query  string // the raw query, e.g. "grant_type=refresh_token"
	Header http.Header
	Body   string
}

// maxRecordedBody bounds the body a recorded or hooked request keeps.
const maxRecordedBody = 1 << 20

// Hook makes h answer every request to path, the endpoint's path under
// /auth/v1 ("/token", "/otp", "/verify", "/logout", "/authorize",
// "/.well-known/jwks.json"), before the API key is checked; nil removes
// the hook.
func (s *Server) Hook(path string, h HookFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.hooks, path)
		return
	}
	s.hooks[path] = h
}

// Calls returns the requests the server received, oldest first, or none
// without [Config.RecordCalls].
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// AddAuthCode registers an auth code for the PKCE grant, as if a browser
// had come back from /authorize with it: the exchange of code with the
// verifier whose S256 is challenge signs the first account in.
func (s *Server) AddAuthCode(code, challenge string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a *account
	if len(s.accounts) > 0 {
		a = s.accounts[0]
	}
	s.flows[code] = &flowState{challenge: challenge, account: a, expires: s.now().Add(flowStateTTL)}
	s.flowsBy[""] = append(s.flowsBy[""], code)
}

// hooked wraps the handler of the endpoint at path (under /auth/v1): it
// records the request when calls are recorded and hands it to the path's
// hook when there is one.
func (s *Server) hooked(path string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hook, record := s.hooks[path], s.record
		s.mu.Unlock()
		if hook == nil && !record {
			h(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if record {
			s.mu.Lock()
			s.calls = append(s.calls, Call{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/auth/v1"),
				Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
			s.mu.Unlock()
		}
		if hook == nil {
			h(w, r)
			return
		}
		hook(w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h(w, r)
		}))
	}
}

package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Keys of the _meta of a tool result.
const (
	// MetaStatus holds the HTTP status the same call answers over REST
	// (200, 201, 204, 404, 403, …).
	MetaStatus = "tablegate/status"
	// MetaRetryAfter holds the Retry-After of a problem that has one (503
	// while the database is unavailable), in seconds as over HTTP.
	MetaRetryAfter = "tablegate/retry_after"
)

// admit resolves the caller of a tool call, refuses it when there is none,
// when its session expired or when guard refuses it, and returns the call's
// raw arguments. A non-nil result is the refusal to answer with; every tool
// admits its caller this way before doing its own work.
func (s *Server) admit(req *mcp.CallToolRequest, guard func(authctx.Auth) *problem.Problem) (authctx.Auth, json.RawMessage, *mcp.CallToolResult) {
	a, session, ok := s.callerOf(req)
	if !ok {
		return a, nil, s.problemResult(problem.WithCode(problem.CodeAuthRequired,
			"The tool call carries no caller: serve the server with Handler, Connect or ServeStdio.").
			WithHeader("WWW-Authenticate", "Bearer"))
	}
	if session && s.expired(a) {
		return a, nil, s.problemResult(expiredProblem())
	}
	if guard != nil {
		if p := guard(a); p != nil {
			return a, nil, s.problemResult(p)
		}
	}
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	return a, raw, nil
}

// handler translates one tool call into a rest.Call, runs the pipeline and
// translates the outcome back. It never runs any step of the pipeline
// itself.
func (s *Server) handler(t *tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, raw, refused := s.admit(req, t.guard)
		if refused != nil {
			return refused, nil
		}
		call, p := t.call(raw)
		if p != nil {
			return s.problemResult(p), nil
		}
		call.Auth = a
		call.Position = db.Position(s.written.Load())
		res, err := t.res.Do(ctx, call)
		if err != nil {
			return s.problemResult(problem.From(err)), nil
		}
		s.noteWritten(res.Position)
		return result(res), nil
	}
}

// call decodes the arguments of a tool call into a rest.Call. Argument
// errors are 400 problems naming the argument, never its value.
func (t *tool) call(raw json.RawMessage) (*rest.Call, *problem.Problem) {
	c := &rest.Call{Operation: t.op.Operation}
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, badArg("", "The arguments must be a JSON object.")
		}
	}
	q := url.Values{}
	for _, name := range slices.Sorted(maps.Keys(args)) { // stable: the first bad argument is reported
		v := args[name]
		switch {
		case name == t.keyArg && t.keyArg != "":
			k, p := t.key(v)
			if p != nil {
				return nil, p
			}
			c.Key = k
		case name == argData && t.takesData:
			if isNull(v) {
				continue
			}
			if int64(len(v)) > t.maxBody {
				return nil, problem.Newf(problem.KindPayloadTooLarge, "The data argument exceeds %d bytes.", t.maxBody)
			}
			c.Body = v
		case name == argQuery && t.takesQuery:
			if p := objectToValues(name, v, q); p != nil {
				return nil, p
			}
		case t.op.Operation == rest.OpList:
			if p := listArg(name, v, q); p != nil {
				return nil, p
			}
		default:
			return nil, badArg(name, "is not an argument of this tool")
		}
	}
	if t.keyArg != "" && c.Key == "" {
		return nil, badArg(t.keyArg, "is required")
	}
	if len(q) > 0 {
		c.Query = q
	}
	return c, nil
}

// key returns the text form of the key argument, as it would appear in the
// REST path; the pipeline parses it.
func (t *tool) key(v json.RawMessage) (string, *problem.Problem) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return "", badArg(t.keyArg, "must be a string or an integer")
	}
	switch k := x.(type) {
	case string:
		if k == "" {
			return "", badArg(t.keyArg, "must not be empty")
		}
		return k, nil
	case json.Number:
		if _, err := strconv.ParseInt(k.String(), 10, 64); err != nil {
			return "", badArg(t.keyArg, "must be an integer")
		}
		return k.String(), nil
	}
	return "", badArg(t.keyArg, "must be a string or an integer")
}

// listArg adds one list argument to the query of a list call.
func listArg(name string, v json.RawMessage, q url.Values) *problem.Problem {
	if isNull(v) {
		return nil
	}
	switch name {
	case argFilters:
		var f map[string]json.RawMessage
		if err := json.Unmarshal(v, &f); err != nil {
			return badArg(name, "must be an object of column conditions")
		}
		for col, cv := range f {
			switch col {
			case argOrder, argLimit, argCursor, argCount:
				return badArg(name+"/"+col, "cannot be filtered: the name is a reserved list parameter")
			}
			var one string
			if json.Unmarshal(cv, &one) == nil {
				q.Add(col, one)
				continue
			}
			var many []string
			if err := json.Unmarshal(cv, &many); err != nil || len(many) == 0 {
				return badArg(name+"/"+col, "must be a condition string or a non-empty array of them")
			}
			for _, m := range many {
				q.Add(col, m)
			}
		}
	case argOrder, argCursor:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return badArg(name, "must be a string")
		}
		q.Set(name, s)
	case argLimit:
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return badArg(name, "must be an integer")
		}
		q.Set(name, n.String())
	case argCount:
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return badArg(name, "must be true or false")
		}
		if b {
			q.Set(name, "exact")
		}
	default:
		return badArg(name, "is not an argument of this tool")
	}
	return nil
}

// objectToValues turns the query argument (a JSON object of scalars or
// arrays of scalars) into query parameters; the pipeline converts them back
// by the action's query schema, exactly as for a REST query string.
func objectToValues(name string, v json.RawMessage, q url.Values) *problem.Problem {
	if isNull(v) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return badArg(name, "must be an object")
	}
	for k, x := range m {
		var arr []json.RawMessage
		if json.Unmarshal(x, &arr) == nil {
			for _, e := range arr {
				s, ok := scalarText(e)
				if !ok {
					return badArg(name+"/"+k, "must hold strings, numbers or booleans")
				}
				q.Add(k, s)
			}
			continue
		}
		if isNull(x) {
			continue
		}
		s, ok := scalarText(x)
		if !ok {
			return badArg(name+"/"+k, "must be a string, number, boolean or an array of them")
		}
		q.Add(k, s)
	}
	return nil
}

func scalarText(v json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return "", false
	}
	switch s := x.(type) {
	case string:
		return s, true
	case json.Number:
		return s.String(), true
	case bool:
		return strconv.FormatBool(s), true
	}
	return "", false
}

// isJSON reports a JSON media type (application/json or */*+json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// badArg is the 400 problem of a bad argument; path is a JSON Pointer
// into the arguments.
func badArg(path, msg string) *problem.Problem {
	p := problem.New(problem.KindBadRequest, "The tool arguments are invalid.")
	p.Errors = []problem.FieldError{{Path: "/" + path, Message: msg}}
	if path == "" {
		p.Errors[0].Path = ""
	}
	return p
}

// result translates a pipeline result: a JSON body becomes text content
// and structured content; a 204 an empty text; another media type text
// (or an embedded blob when it is not UTF-8).
func result(res *rest.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Meta: mcp.Meta{MetaStatus: res.Status}}
	switch {
	case res.Body == nil || res.Status == http.StatusNoContent:
		out.Content = []mcp.Content{&mcp.TextContent{Text: ""}}
	case isJSON(res.ContentType) && json.Valid(res.Body):
		out.Content = []mcp.Content{&mcp.TextContent{Text: string(res.Body)}}
		out.StructuredContent = json.RawMessage(res.Body)
	case utf8.Valid(res.Body):
		out.Content = []mcp.Content{&mcp.TextContent{Text: string(res.Body)}}
	default:
		out.Content = []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "tablegate:result", MIMEType: res.ContentType, Blob: res.Body}}}
	}
	return out
}

// problemResult renders p exactly as the HTTP adapter would (same writer,
// same bytes) into a tool error.
func (s *Server) problemResult(p *problem.Problem) *mcp.CallToolResult {
	w := &bodyWriter{h: http.Header{}}
	s.pw.Write(w, p)
	body := bytes.TrimSuffix(w.body.Bytes(), []byte("\n"))
	meta := mcp.Meta{MetaStatus: w.status}
	if ra := w.h.Get("Retry-After"); ra != "" {
		meta[MetaRetryAfter] = ra
	}
	return &mcp.CallToolResult{
		IsError: true,
		Meta:    meta,
		Content: []mcp.Content{&mcp.TextContent{Text: string(body)}},
	}
}

// bodyWriter captures what problem.Writer writes.
type bodyWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *bodyWriter) Header() http.Header         { return w.h }
func (w *bodyWriter) WriteHeader(code int)        { w.status = code }
func (w *bodyWriter) Write(b []byte) (int, error) { return w.body.Write(b) }

// callerOf returns the caller of a tool call: the fixed caller of a
// session connected with Connect or ServeStdio, or the caller resolved
// for the HTTP request that carried the call.
// session reports a session's fixed caller.
func (s *Server) callerOf(req *mcp.CallToolRequest) (a authctx.Auth, session, ok bool) {
	ex := req.GetExtra()
	if ex == nil {
		return authctx.Auth{}, false, false
	}
	if ex.TokenInfo != nil {
		if c, ok := ex.TokenInfo.Extra[tokenInfoKey].(*sessionCaller); ok && c.server == s {
			return c.auth, true, true
		}
	}
	if ex.Header != nil {
		if id := ex.Header.Get(callHeader); id != "" {
			a, ok := s.calls.get(id)
			return a, false, ok
		}
	}
	return authctx.Auth{}, false, false
}

// sessionClockSkew is the leeway on exp for a session's caller, the
// resolver's default.
const sessionClockSkew = authctx.DefaultClockSkew

// expired reports a user whose access token's exp has passed (beyond the
// clock skew). The caller of an HTTP request was verified for that
// request; a session's fixed caller (stdio, Connect) may outlive its
// token, and is then refused as the REST routes refuse an expired Bearer
// token.
func (s *Server) expired(a authctx.Auth) bool {
	if a.Kind != authctx.KindUser || a.User == nil {
		return false
	}
	if !a.User.ExpiresAt.IsZero() {
		return !s.now().Add(-sessionClockSkew).Before(a.User.ExpiresAt)
	}
	var exp float64
	switch v := a.User.Claims["exp"].(type) {
	case float64:
		exp = v
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return false
		}
		exp = f
	case int64:
		exp = float64(v)
	case int:
		exp = float64(v)
	default:
		return false
	}
	return float64(s.now().Add(-sessionClockSkew).Unix()) >= exp
}

func expiredProblem() *problem.Problem {
	return problem.WithCode(problem.CodeTokenExpired, "The access token has expired; connect again with a fresh token.").
		WithHeader("WWW-Authenticate", `Bearer error="invalid_token"`)
}

// noteWritten raises the server's highest written position to p.
func (s *Server) noteWritten(p db.Position) {
	for {
		cur := s.written.Load()
		if uint64(p) <= cur || s.written.CompareAndSwap(cur, uint64(p)) {
			return
		}
	}
}

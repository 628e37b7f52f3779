package spec

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tablegate/tablegate/rest"
)

// handler documents every operation of one described handler, mounted at
// BasePath/name, like a resource's: tag name, security from its allow list.
func (b *builder) handler(name string, h rest.DescribedHandler) error {
	allow := allowOf(b.opts, name)
	for _, ho := range h.Operations() {
		if ho.ID == "" || ho.Method == "" || !strings.HasPrefix(ho.Path, "/") {
			return fmt.Errorf("%w: handler %q: an operation needs an ID, a method and a path starting with /", ErrDefine, name)
		}
		summary := ho.Summary
		if summary == "" {
			summary = ho.ID
		}
		desc := ho.Description
		if desc == "" {
			desc = summary + "."
		}
		op := &operation{ID: ho.ID, Tags: []string{name}, Summary: summary, Description: desc}
		if ho.Params != nil {
			pp, err := b.queryParams(rest.OperationInfo{ID: ho.ID + "Path", Query: ho.Params})
			if err != nil {
				return err
			}
			for _, p := range pp {
				p.In, p.Required = "path", ptr(true)
				op.Parameters = append(op.Parameters, p)
			}
		}
		if ho.Query != nil {
			qp, err := b.queryParams(rest.OperationInfo{ID: ho.ID, Query: ho.Query})
			if err != nil {
				return err
			}
			op.Parameters = append(op.Parameters, qp...)
		}
		if ho.Input != nil {
			s, err := b.embedSchema(ho.Input, componentName(ho.ID+"Body"))
			if err != nil {
				return err
			}
			comp := componentName(ho.ID + "Body")
			if err := b.addSchema(comp, s); err != nil {
				return err
			}
			op.RequestBody = &requestBody{Required: true,
				Content: newOrdered[*mediaType]().set("application/json", &mediaType{Schema: ref("schemas", comp), Examples: bodyExamples(ho.Input)})}
		}
		status := ho.Status
		if status == 0 {
			status = http.StatusOK
		}
		resp := &response{Description: http.StatusText(status)}
		if ho.Output != nil {
			s, err := b.embedSchema(ho.Output, componentName(ho.ID+"Output"))
			if err != nil {
				return err
			}
			resp.Content = newOrdered[*mediaType]().set("application/json", &mediaType{Schema: s})
		}
		op.Responses = newOrdered[any]().set(strconv.Itoa(status), resp)
		errs := append([]int(nil), ho.Errors...)
		sort.Ints(errs)
		for _, st := range errs {
			rn, ok := errorResponseName[st]
			if !ok {
				return fmt.Errorf("%w: handler %q operation %s: no problem response for status %d", ErrDefine, name, ho.ID, st)
			}
			op.Responses.set(strconv.Itoa(st), ref("responses", rn))
			b.responses[st] = true
		}
		op.Security = securityFor(allow)
		op.Allow = allowStrings(allow)
		path := "/" + name
		if ho.Path != "/" {
			path += ho.Path
		}
		if err := b.addOperation(path, ho.Method, ho.ID, fmt.Sprintf("%s %s", ho.Method, path), op); err != nil {
			return err
		}
	}
	return nil
}

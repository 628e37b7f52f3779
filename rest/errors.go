package rest

import (
	"fmt"

	"github.com/tablegate/tablegate/problem"
)

// Helpers for the caller's mistakes: every one is a 4xx problem whose
// detail names the parameter or path, never a value.

func badKey(keyName, want string) *problem.Problem {
	return problem.Newf(problem.KindBadRequest, "The key %s must be %s.", keyName, want)
}

func badBody(detail string) *problem.Problem {
	return problem.New(problem.KindBadRequest, detail)
}

func badQuery(detail string) *problem.Problem {
	return problem.New(problem.KindBadRequest, detail)
}

func badParam(param, detail string) *problem.Problem {
	return problem.Newf(problem.KindBadRequest, "Query parameter %q: %s.", param, detail)
}

func notFound() *problem.Problem {
	return problem.New(problem.KindNotFound, "No such row.")
}

func methodNotAllowed(allow string) *problem.Problem {
	return problem.New(problem.KindMethodNotAllowed, "The method is not served here.").WithHeader("Allow", allow)
}

func routeNotFound() *problem.Problem {
	return problem.New(problem.KindNotFound, "No such route.")
}

func schemaFailed(what string, errs []problem.FieldError) *problem.Problem {
	p := problem.New(problem.KindBadRequest, "The "+what+" does not match its schema.")
	return withFieldErrors(p, errs)
}

// maxFieldErrors is the most field errors a problem lists: a body of a
// megabyte naming 150 000 unknown keys got an answer of 5.8 MB.
const maxFieldErrors = 20

// withFieldErrors sets p's field errors, the first maxFieldErrors of them,
// saying in the detail how many there were when there were more.
func withFieldErrors(p *problem.Problem, errs []problem.FieldError) *problem.Problem {
	if len(errs) > maxFieldErrors {
		p.Detail = fmt.Sprintf("%s %d errors; the first %d are listed.", p.Detail, len(errs), maxFieldErrors)
		errs = errs[:maxFieldErrors]
	}
	p.Errors = errs
	return p
}

package rest

import "github.com/tablegate/tablegate/problem"

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

func invalidCaller() *problem.Problem {
	return problem.WithCode(problem.CodeTokenInvalid, "The credential is not valid.")
}

func schemaFailed(what string, errs []problem.FieldError) *problem.Problem {
	p := problem.New(problem.KindBadRequest, "The "+what+" does not match its schema.")
	p.Errors = errs
	return p
}

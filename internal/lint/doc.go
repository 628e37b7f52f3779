// Package lint holds repository-wide checks that run as ordinary tests
// (make test): every exported name of the library carries a doc comment,
// and no comment or test name in any module speaks of how the code was
// planned (a specification's sections, a ticket, a delivery round)
// instead of what it does.
package lint

// Package lint holds repository-wide checks that run as ordinary tests
// (make test): every exported name of the library carries a doc comment.
package lint

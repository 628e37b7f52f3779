// Package lint holds repository-wide checks that run as ordinary tests
// (make test): every exported name of the library carries a doc comment,
// and every time.Sleep in a test says, in a "// sleep: <reason>" comment,
// why it is not waiting for something to happen.
package lint

// Package lint holds repository-wide checks that run as ordinary tests
// (make test): every exported name of the library carries a doc comment,
// and no comment or test name in any module speaks of how the code was
// planned (a planning document and its numbered parts, a ticket, a
// delivery round) instead of what it does;
// and every time.Sleep in a test says, in a "// sleep: <reason>" comment,
// why it is not waiting for something to happen.
package lint

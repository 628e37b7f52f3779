package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at link time by release builds
// (-ldflags "-X main.version=v1.2.3"); otherwise the module version or the
// VCS revision recorded by the Go toolchain is printed.
var version = ""

const versionUsage = `Usage:
  tablegate version

Prints the tablegate version (or, for a build from a clone, the commit it
was built from and whether the tree had local changes) and the Go version.
`

func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", versionUsage)
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(e.stdout, "tablegate %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// buildVersion is the -X version when set, else the main module's version
// ("v0.3.1" after go install ...@v0.3.1), else "devel" with the commit and
// time the Go toolchain stamped into a build from a git checkout.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if at != "" {
		return "devel " + rev + dirty + " " + at
	}
	return "devel " + rev + dirty
}

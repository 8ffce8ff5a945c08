package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// runVersion prints what the binary was built from: the module's version
// (a tag for `go install …@vX`, "(devel)" for a build in a clone), the
// VCS revision and time `go build` stamped, and the Go toolchain.
func runVersion(e *env, args []string) error {
	fs := newFlags("version", e)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("unexpected arguments %v", rest)
	}
	version, path := "(unknown)", "github.com/dragonet-go/nsc"
	settings := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.Main.Path != "" {
			path = bi.Main.Path
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	fmt.Fprintf(e.stdout, "nsc %s (%s)\n", version, path)
	if rev := settings["vcs.revision"]; rev != "" {
		dirty := ""
		if settings["vcs.modified"] == "true" {
			dirty = ", with uncommitted changes"
		}
		fmt.Fprintf(e.stdout, "revision %s %s%s\n", rev, settings["vcs.time"], dirty)
	} else {
		fmt.Fprintln(e.stdout, "revision unknown (built without VCS information)")
	}
	fmt.Fprintf(e.stdout, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

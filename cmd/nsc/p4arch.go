package main

import "strings"

// p4Arch is the P4 architecture for a PRG: the one its device has (the
// U280 runs VitisNet's xsa, BMv2 v1model), so that a program is never
// made for an architecture its device does not run.
func p4Arch(arch, prg string) (string, error) {
	var want string
	switch {
	case prg == "U280":
		want = "xsa"
	case strings.HasPrefix(prg, "BMv2"):
		want = "v1model"
	}
	switch {
	case arch == "" && want == "":
		return "", usagef("--arch is required with --prg %q: v1model or xsa", prg)
	case arch == "":
		return want, nil
	case want != "" && arch != want && (arch == "xsa" || arch == "v1model"):
		return "", usagef("--arch %s: %s runs %s", arch, prg, want)
	}
	return arch, nil
}

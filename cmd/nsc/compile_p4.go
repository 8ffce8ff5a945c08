package main

import "errors"

// compileP4 writes the P4 program and table entries for the LPG embedded in
// the PRG.
func compileP4(e *env, files []string, lpg, prg, arch, out string) error {
	return errors.New("--target p4: not built yet")
}

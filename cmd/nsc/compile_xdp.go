package main

import "errors"

// compileXDP writes the XDP program for the LPG embedded in the PRG.
func compileXDP(e *env, files []string, lpg, prg, out string) error {
	return errors.New("--target xdp: not built yet")
}

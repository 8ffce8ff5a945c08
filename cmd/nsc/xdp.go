package main

import "errors"

// runXDP runs a compiled XDP program: `nsc xdp run` (BPF_PROG_TEST_RUN
// over a pcap) and `nsc xdp attach` (on an interface).
func runXDP(e *env, args []string) error {
	return errors.New("nsc xdp: not built yet")
}

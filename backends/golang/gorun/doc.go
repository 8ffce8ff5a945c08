// Package gorun runs any graph through its generated Go fast path
// without the caller writing a program: Build generates the package,
// wraps it in a small main (Serve) and builds it with the go command
// into a cache directory, once per graph and nsc runtime; Program.Run
// sends it frames and reads back where each went and the counters, in
// the interpreter's form (sim.Counters), so they compare with sim's.
//
// The program needs nsc's runtime packages: FindModule finds them (the
// source nsc was built from, the working directory's module, or a
// released version). Without a go command on PATH, Build returns
// ErrNoGo unless the program was built before.
package gorun

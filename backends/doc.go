// Package backends is the contract every code generator meets, and the
// way a graph reaches one.
//
//	model files --lang--> LPG, PRG --embed--> embedded graph (+ PRG limits)
//	    --backends.Input--> Target.Generate --> []Artifact, or Refusals
//
// Inside the single-path targets (Go, XDP):
//
//	graph --lower.Lower--> Program: blocks (F-node, operation, every
//	    port's Exit with O-nodes decided) --lower.Walker (operations
//	    lowered: sets, pops, lookups, conditions, ends) + Dialect-->
//	    Go | C text, printed once per block; analyses from backends/flow
//
// A target (backends/golang, backends/xdp, backends/p4) implements Target:
// its Name, what it Needs of the embedding (a PRG whose limits bound it),
// and Generate, which turns an Input — the LPG embedded in its PRG, or the
// LPG alone — into files. The analyses a generated program rests on are
// shared in backends/flow: one path per frame (SinglePath here), header
// validity along every path, pop chains, counter placement. The Go and
// XDP targets share one lowering and one walk (backends/lower): the
// walker dispatches on each operation, fires ports, records which blocks
// are live and refuses what no dialect prints; conditions are lowered
// once (lower.Walker.Cond), what the printed code knows of each header's
// validity is decided once (lower.Walker.Known), and golang and xdp print
// the parts (a lower.Dialect each). What a printer still decides is
// listed in docs/lowering.md. P4, whose programs are a
// parser and a control rather than a jump graph, takes its exits from
// lower.PortExit and uses the same analyses and refusals.
//
// What a target cannot express it refuses: a *Refusal per node (Target,
// Node, Pos, Reason), all of a graph's as Refusals, every one matching
// ErrUnsupported, so that a caller tells "this target cannot do node N"
// from a bug. nsc compile prints them all, one per line, as
// file:line:col: target: node N: reason.
//
// A new target plugs in as a package backends/<name> implementing Target
// (a jump-graph target prints a lower.Program through a lower.Dialect),
// refusing with Refuse what it cannot print, and registering itself
// (Register: its name, its own flags, the files it writes, a post-step
// such as XDP's clang); cmd/nsc imports it for the registration
// (cmd/nsc/targets.go), and nsc compile and its help list it. Its
// checked-in outputs get a golden test with -update and a line below.
// Applications import a target's runtime (backends/golang/fastpath,
// backends/xdp/xdprun, backends/p4/tableadd), never the generator.
//
// go generate ./... regenerates every checked-in generated file, in this
// order (profiles feed the fast paths): the LB's hot-path profiles, the
// test corpora's profiles, the Go fast paths, the XDP programs, the P4
// programs and their entries, the DOT goldens, the example's Wireshark
// dissector. Each is also a test that
// fails, naming the file and the command, when the file is stale.
package backends

//go:generate go test ../ejfat -run TestHotProfiles -update
//go:generate go test ./golang -run TestCorpusProfiles -update
//go:generate go test ./golang -run TestGeneratedUpToDate -update
//go:generate go test ./xdp -run TestGolden -update
//go:generate go test ./p4 -run TestGolden -update
//go:generate go test ./dot -run TestGolden -update
//go:generate sh -c "cd .. && go run ./cmd/nsc dissector models/ejfat/lb-2021.nsc -o examples/ejfat-lb/udplb.lua"

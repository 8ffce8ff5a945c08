// Command nsc is the network stack compiler's one CLI.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitModel = 1 // the model (or input) is wrong
	exitUsage = 2 // the command line is wrong
)

var targetNames, targetsGenerate = targets()

type command struct {
	name, args, help, example string
	run                       func(env *env, args []string) error
}

var commands = []command{
	{"demo", "[-o DIR]", "run the main demo: seed 003's I/P stack and NIC (predicates, pictures) and seed 000's load balancer (generated fast path vs interpreter)",
		"nsc demo -o /tmp/nsc-demo", runDemo},
	{"check", "FILE…", "load and validate models (DIR/... means every .nsc under DIR)",
		"nsc check models/...", runCheck},
	{"dot", "FILE… (--graph G | --embedded --lpg L --prg P) [-o x.dot|x.svg]", "draw a graph, or an embedded one, in Dragonet's visual language",
		"nsc dot models/inet/udp.nsc --graph UDPIPv4 -o udp.svg", runDot},
	{"pred", "FILE… --graph G --node N", "print the predicate of the packets reaching node N, in DNF",
		"nsc pred models/dragonet/nic.nsc --graph IPNicRx --node RxCsumValid", runPred},
	{"sim", "FILE… --graph G --in in.pcap --out DIR", "run a pcap through the reference interpreter; one pcap per sink",
		"nsc sim models/inet/udp.nsc --graph UDPIPv4 --in in.pcap --out out/", runSim},
	{"embed", "FILE… --lpg L --prg P [--json] [--config FILE | --configure [--port N --ports N --ipv6]]", "embed an LPG into a PRG: where every LPG node goes, and why; configure the PRG's C-nodes from a file or by search",
		"nsc embed models/inet/offload.nsc --lpg UDPIPv4 --prg I82599", runEmbed},
	{"compile", "FILE… --lpg L [--prg P] --target " + strings.Join(targetNames, "|") + " -o DIR", "generate code for the LPG (embedded in P): " + strings.Join(targetsGenerate, ", "),
		"nsc compile models/ejfat/lb-2025.nsc --lpg LB2025 --prg HostRaw --target go -o lbfast", runCompile},
	{"run", "(FILE… --lpg L [--prg P] --in in.pcap --out DIR | --lb MODEL --in in.pcap --out out.pcap [--interp]) [--tables FILE] [--json]", "run a pcap through a model's generated Go fast path (built once, cached; one pcap per sink, as nsc sim), or through an EJFAT LB's",
		"nsc run models/inet/udp.nsc --lpg UDPIPv4 --in in.pcap --out out/", runRun},
	{"lb", "--tables FILE (--listen ADDR [--workers N] [--max-datagram N] | --afxdp IFACE [--queue Q]) [--lb MODEL] [--pin] [--batch N]", "forward EJFAT datagrams live on UDP sockets (or whole frames on an AF_XDP socket) through an LB's fast path; SIGHUP reloads the tables, SIGINT or SIGTERM stops it",
		"nsc lb --lb lb-2025 --tables my.tables --listen 127.0.0.1:19522", runLB},
	{"send", "--to ADDR [--lb v2|v3] [--gso] [--events N] [--size B] [--mtu M] [--rate R] [--data-id D] [--sync ADDR] [--in FILE…] [--pcap OUT]", "cut events into EJFAT segments and send them (or write them to a pcap), paced, with sync messages",
		"nsc send --to 127.0.0.1:19522 --events 100 --size 100000 --rate 1000", runSend},
	{"recv", "(--listen ADDR [--ports 2^k] [--threads N] | --in IN.pcap) [--timeout D] [--max-event B] [--max-bytes B] [--max-events N] [--out DIR] [--verify]", "receive EJFAT segments on consecutive ports (or from a pcap) and reassemble the events",
		"nsc recv --listen 127.0.0.1:19000 --ports 4 --timeout 10s --verify", runRecv},
	{"xdp", "run|attach …", "run a compiled XDP program over a pcap in the kernel, or attach it to an interface",
		"nsc xdp run --obj lb/lb.o --tables my.tables --in in.pcap --out out.pcap", runXDP},
	{"dissector", "FILE… [--headers H,…] [-o FILE.lua]", "generate a Wireshark Lua dissector for the model's headers",
		"nsc dissector models/ejfat/lb-2021.nsc -o udplb.lua", runDissector},
	{"cp", "--grpc HOST:PORT --db FILE --admin-token-file FILE [--http HOST:PORT] [--config FILE] …", "run the EJFAT control plane: the udplbd2-compatible gRPC API over SQLite, sync servers, metrics",
		"nsc cp --grpc 127.0.0.1:18008 --db cp.db --admin-token-file admin.token --http 127.0.0.1:18080", runCP},
	{"lbctl", "reserve|free|status|overview|register|deregister|send-state|token … [--cp ADDR] [--token T | --token-file F]", "call the EJFAT control plane's API, as E2SAR's lbadm does",
		"nsc lbctl overview --cp 127.0.0.1:18008 --token-file admin.token", runLBCtl},
	{"verify", "FILE… --lpg L --prg P [--packets N] [--seed S]", "run the same packets through the LPG alone and embedded; any difference fails",
		"nsc verify models/inet/offload.nsc --lpg UDPIPv4 --prg I82599 --packets 10000", runVerify},
	{"naa", "[--size B] [--calls N] [--irn] [--loss N]", "call a function on an NAA over RoCEv2 on loopback: MRSP, the input as RDMA WRITEs with the function code, the result written back",
		"nsc naa --size 67108864 --irn", runNAA},
	{"fuzz", "[--models N] [--seed S] [--start I] [--targets go,xdp,p4] [-o DIR]", "generate random models and hold every embedding and target to the interpreter on them; any difference fails",
		"nsc fuzz --models 100 --seed 42 -o fuzz-out", runFuzz},
	{"version", "", "print nsc's module version, VCS revision and Go version",
		"nsc version", runVersion},
}

// subcommands are the commands behind a command's first argument; only
// their help is looked up here, the command dispatches them.
var subcommands = []command{
	{"xdp run", "--obj X.o [--tables FILE] --in in.pcap --out out.pcap", "run every frame of a pcap through a compiled XDP program in the kernel (BPF_PROG_TEST_RUN)",
		"nsc xdp run --obj lb/lb.o --tables my.tables --in in.pcap --out out.pcap", nil},
	{"xdp attach", "--dev IFACE --obj X.o [--tables FILE] [--duration D] [--mode M] [--pin DIR | --host MODEL]", "attach a compiled XDP program to an interface, with an LB's host part behind it if need be",
		"nsc xdp attach --dev eth1 --obj lb/lb.o --tables my.tables --host lb-2026", nil},
}

// env carries the streams, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
}

// usageError is a wrong command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func main() {
	os.Exit(run(os.Args[1:], &env{os.Stdout, os.Stderr}))
}

func run(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help":
		usage(e.stdout)
		return exitOK
	case "--version":
		args = []string{"version"}
	case "help":
		if len(args) == 1 {
			usage(e.stdout)
			return exitOK
		}
		args = append(args[1:], "--help")
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(e, args[1:])
		var ue *usageError
		var he *helpRequest
		switch {
		case err == nil:
			return exitOK
		case errors.As(err, &he):
			commandHelp(e.stdout, he.name, he.fs)
			return exitOK
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "nsc %s: %s\nusage: nsc %s %s\n", c.name, ue.msg, c.name, c.args)
			return exitUsage
		default:
			// Each line names the command: a model's errors are one a line.
			for line := range strings.Lines(err.Error()) {
				if !strings.HasPrefix(line, "nsc ") && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
					line = "nsc " + c.name + ": " + line
				}
				fmt.Fprintln(e.stderr, strings.TrimSuffix(line, "\n"))
			}
			return exitModel
		}
	}
	fmt.Fprintf(e.stderr, "nsc: unknown command %q (nsc --help lists them)\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "nsc — a network stack compiler (LPG + PRG → embedded, offloaded, generated)")
	fmt.Fprintln(w, "\nusage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  nsc %-6s %s\n         %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintln(w, "\nnsc COMMAND --help (or nsc help COMMAND) describes a command's flags, with an example.")
}

// helpRequest is -h, --help or help on a command's command line: its
// help goes to stdout, exit 0.
type helpRequest struct {
	name string        // "check", "xdp run"
	fs   *flag.FlagSet // nil for a command without flags of its own
}

func (h *helpRequest) Error() string { return "help requested" }

// commandHelp prints a command's purpose, usage, flags and example.
func commandHelp(w io.Writer, name string, fs *flag.FlagSet) {
	for _, c := range append(commands[:len(commands):len(commands)], subcommands...) {
		if c.name != name {
			continue
		}
		fmt.Fprintf(w, "nsc %s — %s\n\nusage: nsc %s %s\n", c.name, c.help, c.name, c.args)
		if fs != nil && hasFlags(fs) {
			fmt.Fprintln(w, "\nflags:")
			fs.SetOutput(w)
			fs.PrintDefaults()
		}
		for _, sub := range subcommands {
			if strings.HasPrefix(sub.name, name+" ") {
				fmt.Fprintf(w, "\n  nsc %s %s\n      %s\n", sub.name, sub.args, sub.help)
			}
		}
		fmt.Fprintf(w, "\nexample:\n  %s\n", c.example)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (`nsc dot FILE --graph G`).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{strings.TrimPrefix(fs.Name(), "nsc "), fs}
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlags makes a command's flag set. The env is not needed (run prints
// help and errors); every command passes its own for uniformity.
func newFlags(name string, _ *env) *flag.FlagSet {
	fs := flag.NewFlagSet("nsc "+name, flag.ContinueOnError)
	// parseArgs reports both help (to stdout) and errors (to stderr, once).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, strings.TrimSuffix(word, "s"))
}

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

type command struct {
	name, args, help string
	run              func(env *env, args []string) error
}

var commands = []command{
	{"demo", "[-o DIR]", "run the main demo: seed 003's I/P stack and NIC (predicates, pictures) and seed 000's load balancer (generated fast path vs interpreter)", runDemo},
	{"check", "FILE…", "load and validate models (DIR/... means every .nsc under DIR)", runCheck},
	{"dot", "FILE… (--graph G | --embedded --lpg L --prg P) [-o x.dot|x.svg]", "draw a graph, or an embedded one, in Dragonet's visual language", runDot},
	{"pred", "FILE… --graph G --node N", "print the predicate of the packets reaching node N, in DNF", runPred},
	{"sim", "FILE… --graph G --in in.pcap --out DIR", "run a pcap through the reference interpreter; one pcap per sink", runSim},
	{"embed", "FILE… --lpg L --prg P [--json] [--config FILE | --configure [--port N --ports N --ipv6]]", "embed an LPG into a PRG: where every LPG node goes, and why; configure the PRG's C-nodes from a file or by search", runEmbed},
	{"compile", "FILE… --lpg L [--prg P] --target go|xdp|p4 -o DIR", "generate code for the LPG (embedded in P): a Go package, an XDP program, a P4 program", runCompile},
	{"run", "--lb MODEL --tables FILE --in in.pcap --out out.pcap [--interp]", "run a pcap through an EJFAT LB's generated fast path (or the interpreter)", runRun},
	{"lb", "--tables FILE --listen ADDR [--lb MODEL] [--workers N] [--pin] [--batch N] [--max-datagram N]", "forward EJFAT datagrams live on UDP sockets through an LB's fast path; SIGHUP reloads the tables, SIGINT or SIGTERM stops it", runLB},
	{"send", "--to ADDR [--lb v2|v3] [--gso] [--events N] [--size B] [--mtu M] [--rate R] [--data-id D] [--sync ADDR] [--in FILE…] [--pcap OUT]", "cut events into EJFAT segments and send them (or write them to a pcap), paced, with sync messages", runSend},
	{"recv", "(--listen ADDR [--ports 2^k] [--threads N] | --in IN.pcap) [--timeout D] [--max-event B] [--max-bytes B] [--max-events N] [--out DIR] [--verify]", "receive EJFAT segments on consecutive ports (or from a pcap) and reassemble the events", runRecv},
	{"xdp", "run|attach …", "run a compiled XDP program over a pcap in the kernel, or attach it to an interface", runXDP},
	{"dissector", "FILE… [--headers H,…] [-o FILE.lua]", "generate a Wireshark Lua dissector for the model's headers", runDissector},
	{"cp", "--grpc HOST:PORT --db FILE --admin-token-file FILE [--http HOST:PORT] [--config FILE] …", "run the EJFAT control plane: the udplbd2-compatible gRPC API over SQLite, sync servers, metrics", runCP},
	{"lbctl", "reserve|free|status|overview|register|deregister|send-state|token … [--cp ADDR] [--token T | --token-file F]", "call the EJFAT control plane's API, as E2SAR's lbadm does", runLBCtl},
	{"verify", "FILE… --lpg L --prg P [--packets N] [--seed S]", "run the same packets through the LPG alone and embedded; any difference fails", runVerify},
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(e, args[1:])
		var ue *usageError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, &ue):
			fmt.Fprintf(e.stderr, "nsc %s: %s\nusage: nsc %s %s\n", c.name, ue.msg, c.name, c.args)
			return exitUsage
		default:
			fmt.Fprintln(e.stderr, err)
			return exitModel
		}
	}
	fmt.Fprintf(e.stderr, "nsc: unknown command %q\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "nsc — a network stack compiler (LPG + PRG → embedded, offloaded, generated)")
	fmt.Fprintln(w, "\nusage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  nsc %-6s %s\n         %s\n", c.name, c.args, c.help)
	}
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (`nsc dot FILE --graph G`).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
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

func newFlags(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("nsc "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
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

package backends

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/errlist"
)

// ErrUnsupported is what every Refusal matches (errors.Is): the target
// cannot express part of the graph. Any other error from a backend is a
// bug or a bad argument, not a property of the graph.
var ErrUnsupported = errors.New("not supported by the target")

// Refusal says that a target cannot express a node (or, with no node, the
// graph as a whole), where the node is declared, and why.
type Refusal struct {
	Target string // "go", "xdp", "p4 (xsa)", …
	Node   string // the node as the model names it; "" for the whole graph
	Pos    string // file:line:col of the node's declaration, when known
	Reason string
}

// Refuse makes the refusal of node n (nil: the graph) by target.
func Refuse(target string, n *dataflow.Node, format string, args ...any) *Refusal {
	r := &Refusal{Target: target, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		r.Node, _, _ = strings.Cut(n.Name, "@") // an embedded copy by its LPG name
		r.Pos = n.Pos
	}
	return r
}

// Error is "file:line:col: target: node N: reason".
func (r *Refusal) Error() string {
	var b strings.Builder
	if r.Pos != "" {
		b.WriteString(r.Pos + ": ")
	}
	b.WriteString(r.Target)
	if r.Node != "" {
		b.WriteString(": node " + r.Node)
	}
	return b.String() + ": " + r.Reason
}

func (r *Refusal) Is(target error) bool { return target == ErrUnsupported }

// Refusals are all the refusals of one graph, in the graph's order, so
// that a user sees every node a target cannot take at once. errors.As
// finds the first *Refusal; errors.Is matches ErrUnsupported.
type Refusals = errlist.List[*Refusal]

// SinglePath refuses, for target, every port that fans out or spawns: the
// generated code follows one path per frame.
func SinglePath(g *dataflow.Graph, target string) Refusals {
	var rs Refusals
	for _, n := range g.Nodes {
		for _, p := range n.Ports {
			if len(p.Spawn) > 0 {
				rs = append(rs, Refuse(target, n, "port %s has a spawn edge; the generated code runs one task per frame", p.Name))
			}
			if len(p.Out) > 1 {
				rs = append(rs, Refuse(target, n, "port %s leads to %d nodes; the generated code needs one path per frame", p.Name, len(p.Out)))
			}
		}
	}
	return rs
}

// Input is what a target generates from: the graph (an LPG embedded in a
// PRG, or an LPG alone) and the PRG (nil for an LPG alone), whose declared
// limits bound what the target may use.
type Input struct {
	Graph *dataflow.Graph
	PRG   *dataflow.Graph
}

// Limits are the PRG's declared limits (none for an LPG alone).
func (in Input) Limits() map[string]int {
	if in.PRG == nil {
		return nil
	}
	return in.PRG.Limits
}

// Artifact is one file a target generates.
type Artifact struct {
	Name string // relative to the output directory
	Data []byte
}

// Needs is what a target asks of the embedding.
type Needs struct {
	// PRG: the target takes its limits from a PRG, so the LPG must be
	// embedded in one (XDP: BPF bounds every map; P4: the device's tables).
	PRG bool
}

// Target is a code generator: the CLI and the tests drive every target
// through it. A target plugs in by implementing it in its own package
// (backends/<name>) and being listed in the CLI's targets.
type Target interface {
	// Name is the target as the CLI and refusals name it.
	Name() string
	Needs() Needs
	// Generate returns the target's artifacts for in, or refuses: every
	// node it cannot express as a *Refusal (several as Refusals).
	Generate(in Input) ([]Artifact, error)
}

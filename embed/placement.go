package embed

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/lpg"
)

// Kind is where an LPG node went.
type Kind uint8

const (
	Software Kind = iota
	Hardware
	Split
	Pruned
	// Program: the node runs behind program sinks only (a P4 pipeline):
	// the target's backend compiles it into the device's program.
	Program
	// Host: the node is the LPG's, behind a program sink, but the device
	// cannot run it (a table over its limits) or must leave the frame
	// unchanged for the host (device.go): frames that reach it leave the
	// device by its punt and the host runs it.
	Host
)

var kindNames = [...]string{"software", "hardware", "split", "pruned", "program", "host"}

func (k Kind) String() string { return kindNames[k] }

// MarshalText lets JSON carry the kind by name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Placement says where an LPG node went and why.
type Placement struct {
	Node string `json:"node"`
	Kind Kind   `json:"placement"`
	// Hardware is the PRG node that does the work (hardware, split).
	Hardware string `json:"hardware,omitempty"`
	// Guard is the residual guard in front of a split node: the classes
	// the software still handles.
	Guard string `json:"guard,omitempty"`
	// Serves lists the PRG Rx sinks behind which a copy of the node runs.
	Serves []string `json:"serves,omitempty"`
	Reason string   `json:"reason"`
	// Counterexample is a packet class for which the hardware does not do
	// the node's work (refusals and splits).
	Counterexample string `json:"counterexample,omitempty"`
}

func (b *builder) placeOf(n *dataflow.Node) *Placement {
	p, ok := b.place[n]
	if !ok {
		p = &Placement{Node: n.Name}
		b.place[n] = p
	}
	return p
}

// placement completes a node's placement from what happened to its copies.
func (b *builder) placement(n *dataflow.Node) Placement {
	p := *b.placeOf(n)
	var serves []string
	alive := 0
	for _, e := range b.copies[n] {
		if !e.removed {
			alive++
			serves = append(serves, e.serves...)
		}
	}
	p.Serves = strings.Split(b.joinSinks(serves), ", ")
	if len(serves) == 0 {
		p.Serves = nil
	}
	notes := b.story(n)
	switch {
	case n.Name == lpg.RxEntry && len(b.rxSinks) > 0 && !b.keptEntry:
		p.Kind, p.Reason = Pruned, "joined to the PRG's Rx sinks "+b.joinSinks(names(b.rxSinks))
	case n.Name == lpg.RxEntry && len(b.rxSinks) > 0 && alive == 0:
		p.Kind, p.Reason = Pruned, fmt.Sprintf("joined to the PRG's Rx sinks %s; %s parsed from %s before them",
			b.joinSinks(names(b.rxSinks)), b.prg.Name, b.lpg.Schema.Headers[n.Op.Header].Name)
	case n.Name == lpg.TxExit && b.txEntry != nil:
		p.Kind, p.Reason = Pruned, "joined to the PRG's Tx entry "+b.txEntry.name
	case p.Kind == Hardware || p.Kind == Split:
	case alive == 0 && len(b.copies[n]) > 0:
		p.Kind, p.Reason = Pruned, notes
	case b.unattached[n] != "" && p.Reason == "":
		p.Kind, p.Reason = Software, b.unattached[n]
	case p.Reason == "":
		p.Kind = Software
		runs := "runs behind "
		if b.programSinks(p.Serves) {
			p.Kind, runs = Program, "in the program behind "
		}
		switch {
		case len(p.Serves) > 0 && notes != "":
			p.Reason = runs + b.joinSinks(p.Serves) + "; " + notes
		case len(p.Serves) > 0:
			p.Reason = runs + b.joinSinks(p.Serves)
		case notes != "":
			p.Reason = notes
		default:
			p.Reason = "no hardware node of " + b.prg.Name + " does this"
		}
	}
	if n.Name == lpg.RxEntry && b.keptEntry && alive > 0 && len(b.parsedBy) > 0 {
		p.Reason += fmt.Sprintf("; not behind %s: %s parsed from %s before them", b.joinSinks(b.parsedBy), b.prg.Name, b.lpg.Schema.Headers[n.Op.Header].Name)
	}
	return p
}

// programSinks reports whether the named PRG Rx sinks are all program
// sinks (and there are some).
func (b *builder) programSinks(serves []string) bool {
	if len(serves) == 0 {
		return false
	}
	for _, name := range serves {
		found := false
		for _, s := range b.rxSinks {
			if s.Name == name {
				found = s.Program
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func names(ns []*dataflow.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// WriteReport prints the placements as a table for people.
func (em *Embedding) WriteReport(w io.Writer) error {
	fmt.Fprintf(w, "embedding lpg %s into prg %s: %d nodes in the embedded graph\n\n", em.LPG.Name, em.PRG.Name, len(em.Graph.Nodes))
	width := 4
	for _, p := range em.Placements {
		width = max(width, len(p.Node))
	}
	indent := strings.Repeat(" ", width+4)
	for _, p := range em.Placements {
		switch p.Kind {
		case Hardware:
			fmt.Fprintf(w, "%-*s  hardware %s\n%s%s\n", width, p.Node, p.Hardware, indent, p.Reason)
		case Split:
			fmt.Fprintf(w, "%-*s  split: software when %s, else hardware %s\n%s%s\n", width, p.Node, p.Guard, p.Hardware, indent, p.Reason)
		case Host:
			fmt.Fprintf(w, "%-*s  host:     %s\n", width, p.Node, p.Reason)
		default:
			fmt.Fprintf(w, "%-*s  %-9s %s\n", width, p.Node, p.Kind, p.Reason)
		}
		if p.Counterexample != "" && p.Kind != Hardware {
			fmt.Fprintf(w, "%scounterexample: %s\n", indent, p.Counterexample)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// WriteJSON prints the placements as JSON.
func (em *Embedding) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		LPG        string      `json:"lpg"`
		PRG        string      `json:"prg"`
		Placements []Placement `json:"placements"`
	}{em.LPG.Name, em.PRG.Name, em.Placements})
}

// Placement returns the placement of an LPG node.
func (em *Embedding) Placement(node string) (Placement, bool) {
	for _, p := range em.Placements {
		if p.Node == node {
			return p, true
		}
	}
	return Placement{}, false
}

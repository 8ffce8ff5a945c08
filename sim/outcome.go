package sim

import (
	"encoding/hex"
	"fmt"

	"github.com/dragonet-go/nsc/dataflow"
)

// Outcome is where one frame ended: "sink NODE" with the bytes that left
// (hex), or "drop NODE: REASON". Differential tests compare a target's
// outcomes with these.
type Outcome struct {
	Where string
	Data  string
}

func (o Outcome) String() string {
	if o.Data == "" {
		return o.Where
	}
	return o.Where + " " + o.Data
}

// Outcome runs one frame and says where it ended (the last sink it
// reached, or its drop).
func (m *Machine) Outcome(frame []byte) Outcome {
	var out Outcome
	m.Run(frame, func(n *dataflow.Node, data []byte) {
		out = Outcome{"sink " + n.Name, hex.EncodeToString(data)}
	})
	if k, ok := m.LastDrop(); ok && out.Where == "" {
		out = Outcome{Where: fmt.Sprintf("drop %s: %s", k.Node, k.Reason)}
	}
	return out
}

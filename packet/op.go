package packet

import "fmt"

// OpKind is what an F-node does.
type OpKind uint8

const (
	OpInput           OpKind = iota // a source: packets enter here, parsed from Header if >= 0
	OpParse                         // run the parse graph from Header
	OpExtract                       // extract one Header at the cursor
	OpTest                          // evaluate Cond
	OpSwitch                        // pick a port by the value of Expr
	OpLookup                        // look up Table and run the chosen action
	OpSet                           // assignments, with incremental checksum updates
	OpPush                          // insert Header (zeroed) at the front or after After
	OpPop                           // remove Header
	OpChecksumVerify                // verify Header's checksum
	OpChecksumCompute               // compute Header's checksum into its field
	OpEmit                          // transmit / hand over (a sink)
	OpSteer                         // deliver to queue or socket Label (a sink)
	OpDrop                          // drop, counted under Label (a sink)
	OpCount                         // count under Label and go on
	OpContext                       // a driver context (descriptor) setting, named Label
	OpNop                           // pass through
	OpPlace                         // place a segment in keyed State at Offset
	OpICRCVerify                    // verify the RoCEv2 ICRC of the transport starting at Header
	OpICRCCompute                   // compute that ICRC into the packet's last 4 IP payload bytes
	OpLoad                          // read Register's entry into its metadata header
	OpStore                         // write Register's entry from its metadata header
	OpCut                           // remove the bytes from the cursor to the end of the frame
)

var opNames = [...]string{"input", "parse", "extract", "test", "switch", "lookup", "set", "push", "pop",
	"checksum verify", "checksum compute", "emit", "steer", "drop", "count", "context", "nop", "place",
	"checksum verify icrc", "checksum compute icrc", "load", "store", "cut"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", k)
}

// Port names shared by all boolean operations.
const (
	PortTrue  = "true"
	PortFalse = "false"
	PortOut   = "out"
)

// Case is one arm of a switch.
type Case struct {
	Value Value
	Port  string
}

// Op is an F-node's operation, resolved against a Schema.
type Op struct {
	Kind   OpKind
	Header int   // parse, extract, push, pop, checksum (icrc: the BTH)
	After  int   // push: insert after this header; -1 means at the front
	Extra  int   // push: zeroed bytes for the header's variable-length field
	Cond   *Expr // test
	Expr   *Expr // switch
	Cases  []Case
	// Default is the switch port taken when no case matches.
	Default string
	Table   int // lookup
	Assign  []Assign
	// Update lists the headers whose checksums a set updates incrementally.
	Update []int
	Label  string
	// place: the state, the segment's offset in its event, and its payload
	// size (nil: the rest of the frame from the cursor).
	State        int
	Offset, Size *Expr
	// load, store: the register.
	Register int

	// casePort[i] is the port index of Cases[i]; defaultPort that of Default.
	casePort    []int
	defaultPort int
}

// Resolve precomputes port indices. The loader calls it once per node.
func (o *Op) Resolve(s *Schema) {
	if o.Kind != OpSwitch {
		return
	}
	ports := o.Ports(s)
	index := func(name string) int {
		for i, p := range ports {
			if p == name {
				return i
			}
		}
		return -1
	}
	o.casePort = make([]int, len(o.Cases))
	for i, c := range o.Cases {
		o.casePort[i] = index(c.Port)
	}
	o.defaultPort = index(o.Default)
}

// Terminal reports whether packets end at this operation.
func (o *Op) Terminal() bool {
	return o.Kind == OpEmit || o.Kind == OpSteer || o.Kind == OpDrop
}

// Ports lists the ports the operation can activate, in a fixed order.
func (o *Op) Ports(s *Schema) []string {
	switch o.Kind {
	case OpParse, OpExtract, OpTest, OpChecksumVerify, OpICRCVerify:
		return []string{PortTrue, PortFalse}
	case OpSwitch:
		var ps []string
		seen := map[string]bool{}
		for _, c := range o.Cases {
			if !seen[c.Port] {
				seen[c.Port] = true
				ps = append(ps, c.Port)
			}
		}
		if !seen[o.Default] {
			ps = append(ps, o.Default)
		}
		return ps
	case OpLookup:
		t := s.Tables[o.Table].Spec
		ps := make([]string, len(t.Actions))
		for i, a := range t.Actions {
			ps[i] = a.Name
		}
		return ps
	case OpPlace:
		return PlacePorts
	case OpLoad:
		return LoadPorts
	case OpStore:
		return StorePorts
	case OpEmit, OpSteer, OpDrop:
		return nil
	}
	return []string{PortOut}
}

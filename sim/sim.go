package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// MaxSpawn bounds the tasks one frame may spawn, so a spawn cycle ends.
const MaxSpawn = 8

// Drop reasons.
const (
	ReasonMalformed   = "malformed"
	ReasonUnconnected = "unconnected"
	ReasonUndecided   = "undecided" // no node took the packet any further
	ReasonSpawnLimit  = "spawn limit"
	// ReasonOversize: a frame longer than the machine's MaxFrame, not
	// run (counted under the graph's name).
	ReasonOversize = "oversize"
)

// Emit receives a packet leaving at a sink; data is valid only during the
// call.
type Emit func(sink *dataflow.Node, data []byte)

// Machine runs one graph. It is not safe for concurrent use.
type Machine struct {
	g      *dataflow.Graph
	source *dataflow.Node // the first source, where Run starts
	order  []*dataflow.Node
	pos    []int // node ID -> index in order
	ops    [][]operand
	ports  [][]int // per F-node: op port index -> node port index, -1 if undeclared
	env    packet.Env
	fired  []int
	pkt    *packet.Packet
	spawns []spawn
	pool   []*packet.Packet

	nodeRuns []uint64
	sinks    []uint64
	drops    map[DropKey]uint64
	counts   map[string]uint64 // by the label of count operations
	last     DropKey           // the last drop of the current frame
	dropped  bool
	maxFrame int // 0: none
	keyed    *keyed
	clock    func() time.Time // nil: time.Now
}

// DropKey names a drop: where and why.
type DropKey struct {
	Node, Reason string
}

type operand struct {
	src   int // node ID
	ports []*dataflow.Port
}

type spawn struct {
	to  *dataflow.Node
	pkt *packet.Packet
}

const (
	notReached = -10 // apart from packet.End and packet.Malformed
	ended      = -11 // ended and already counted
)

// New prepares a machine for g, a validated graph. tables holds the runtime
// tables in Schema.Tables order; nil makes empty ones.
func New(g *dataflow.Graph, tables []*table.Table) (*Machine, error) {
	order := g.Order()
	if order == nil {
		return nil, fmt.Errorf("graph %s has a cycle", g.Name)
	}
	if tables == nil {
		for _, t := range g.Schema.Tables {
			tables = append(tables, table.New(t.Spec))
		}
	}
	if len(tables) != len(g.Schema.Tables) {
		return nil, fmt.Errorf("graph %s: %d tables given, the model has %d", g.Name, len(tables), len(g.Schema.Tables))
	}
	m := &Machine{
		g: g, order: order,
		pos:      make([]int, len(g.Nodes)),
		ops:      make([][]operand, len(g.Nodes)),
		ports:    make([][]int, len(g.Nodes)),
		env:      packet.Env{Tables: table.Set(tables), Registers: table.RegisterSet(table.NewRegisters(g.Schema))},
		fired:    make([]int, len(g.Nodes)),
		pkt:      packet.NewPacket(g.Schema),
		nodeRuns: make([]uint64, len(g.Nodes)),
		sinks:    make([]uint64, len(g.Nodes)),
		drops:    map[DropKey]uint64{},
		counts:   map[string]uint64{},
	}
	m.keyed = newKeyed(m, g.Schema.States)
	m.env.States = m.keyed
	if srcs := g.Sources(); len(srcs) > 0 {
		m.source = srcs[0]
	}
	for i, n := range order {
		m.pos[n.ID] = i
		if n.Kind == dataflow.FNode {
			for _, name := range n.Op.Ports(g.Schema) {
				idx := -1
				if p := n.Port(name); p != nil {
					idx = p.Index
				}
				m.ports[n.ID] = append(m.ports[n.ID], idx)
			}
		}
		if n.Kind != dataflow.ONode {
			continue
		}
		for _, x := range dataflow.Operands(n) {
			o := operand{src: int(x.ID)}
			for _, e := range n.In {
				if e.From.Node == x {
					o.ports = append(o.ports, e.From)
				}
			}
			m.ops[n.ID] = append(m.ops[n.ID], o)
		}
	}
	return m, nil
}

// ForgetRegisters empties the machine's registers, as if it were new;
// its keyed state, tables and counters stay.
func (m *Machine) ForgetRegisters() {
	m.env.Registers = table.RegisterSet(table.NewRegisters(m.g.Schema))
}

// ShareRegisters makes the machine read and write with's registers, as a
// device's host part reads and writes the device's.
func (m *Machine) ShareRegisters(with *Machine) { m.env.Registers = with.env.Registers }

// Graph is the graph the machine runs.
func (m *Machine) Graph() *dataflow.Graph { return m.g }

// Run runs frame through the graph from its first source.
func (m *Machine) Run(frame []byte, emit Emit) {
	if m.source == nil {
		m.drops[DropKey{m.g.Name, "no source"}]++
		return
	}
	m.RunAt(m.source, frame, emit)
}

// RunAt runs frame through the graph starting at node start.
func (m *Machine) RunAt(start *dataflow.Node, frame []byte, emit Emit) {
	m.RunMeta(start, frame, nil, emit)
}

// SetMaxFrame makes the machine hold frames longer than n bytes to a
// target's longest frame: they are not run, and are counted under the
// graph's name, reason oversize (each backend says what it does with them,
// docs/language.md). 0, the default, takes frames of any length.
func (m *Machine) SetMaxFrame(n int) { m.maxFrame = n }

// RunMeta is RunAt with the packet's metadata fields (Schema.MetaFields
// slots; missing ones are zero) set before the first node runs: what a
// socket or a descriptor hands over with the bytes.
func (m *Machine) RunMeta(start *dataflow.Node, frame []byte, meta []packet.Value, emit Emit) {
	m.dropped = false
	if m.maxFrame > 0 && len(frame) > m.maxFrame {
		m.drop(DropKey{m.g.Name, ReasonOversize})
		return
	}
	m.pkt.Reset(frame)
	copy(m.pkt.Meta, meta)
	m.task(start, m.pkt, emit)
	for n := 0; len(m.spawns) > 0; n++ {
		s := m.spawns[0]
		m.spawns = m.spawns[1:]
		if n >= MaxSpawn {
			m.drop(DropKey{s.to.Name, ReasonSpawnLimit})
		} else {
			m.task(s.to, s.pkt, emit)
		}
		m.pool = append(m.pool, s.pkt)
	}
	m.spawns = m.spawns[:0]
}

// task runs one packet from start until nothing more fires.
func (m *Machine) task(start *dataflow.Node, p *packet.Packet, emit Emit) {
	for i := range m.fired {
		m.fired[i] = notReached
	}
	ends := 0
	for _, n := range m.order[m.pos[start.ID]:] {
		var port int
		switch {
		case n == start:
			port = m.runF(n, p)
		case n.Kind == dataflow.ONode:
			port = m.decide(n)
			if port == notReached {
				continue
			}
		case n.Kind == dataflow.FNode && m.reached(n):
			port = m.runF(n, p)
		default:
			continue // C-nodes carry configuration only
		}
		m.fired[n.ID] = port
		switch {
		case port == packet.Malformed:
			m.drop(DropKey{n.Name, ReasonMalformed})
			return // the bytes are unusable for every branch
		case port == ended:
			ends++
			continue
		case port == packet.End:
			ends++
			if n.Op.Kind == packet.OpDrop {
				m.drop(DropKey{n.Name, n.Op.Label})
			} else {
				m.sinks[n.ID]++
				emit(n, p.Data)
			}
			continue
		}
		pt := n.Ports[port]
		for _, e := range pt.Spawn {
			q := m.packetFromPool()
			q.Clone(p)
			m.spawns = append(m.spawns, spawn{e.To, q})
		}
		if len(pt.Out) == 0 {
			ends++
			if n.Sink {
				m.sinks[n.ID]++
				emit(n, p.Data)
			} else if len(pt.Spawn) == 0 {
				m.drop(DropKey{n.Name + "." + pt.Name, ReasonUnconnected})
			}
		}
	}
	if ends == 0 {
		m.drop(DropKey{start.Name, ReasonUndecided})
	}
}

func (m *Machine) drop(k DropKey) {
	m.drops[k]++
	m.last, m.dropped = k, true
}

// LastDrop is the last drop of the frame run last, if it was dropped.
func (m *Machine) LastDrop() (DropKey, bool) { return m.last, m.dropped }

func (m *Machine) packetFromPool() *packet.Packet {
	if k := len(m.pool); k > 0 {
		q := m.pool[k-1]
		m.pool = m.pool[:k-1]
		return q
	}
	return packet.NewPacket(m.g.Schema)
}

// runF runs an F-node's operation and returns the fired port (an index
// into n.Ports), packet.End or packet.Malformed.
func (m *Machine) runF(n *dataflow.Node, p *packet.Packet) int {
	m.nodeRuns[n.ID]++
	if n.Op.Kind == packet.OpCount {
		m.counts[n.Op.Label]++
	}
	k := n.Op.Exec(p, &m.env)
	if k < 0 {
		return k
	}
	if idx := m.ports[n.ID][k]; idx >= 0 {
		return idx
	}
	m.drop(DropKey{n.Name + "." + n.Op.Ports(m.g.Schema)[k], ReasonUnconnected})
	return ended
}

// reached reports whether a fired port leads to n.
func (m *Machine) reached(n *dataflow.Node) bool {
	for _, e := range n.In {
		if m.fired[e.From.Node.ID] == e.From.Index {
			return true
		}
	}
	return false
}

// decide evaluates an O-node; it returns the fired port or notReached.
func (m *Machine) decide(n *dataflow.Node) int {
	trues, falses := 0, 0
	ops := m.ops[n.ID]
	for _, o := range ops {
		f := m.fired[o.src]
		for _, pt := range o.ports {
			if pt.Index == f {
				if dataflow.Truthy(pt) {
					trues++
				} else {
					falses++
				}
				break
			}
		}
	}
	var v bool
	switch n.Logic {
	case dataflow.And, dataflow.Nand:
		switch {
		case falses > 0:
			v = false
		case trues == len(ops):
			v = true
		default:
			return notReached
		}
	case dataflow.Or, dataflow.Nor:
		switch {
		case trues > 0:
			v = true
		case falses == len(ops):
			v = false
		default:
			return notReached
		}
	case dataflow.Not:
		switch {
		case falses > 0:
			v = true
		case trues > 0:
			v = false
		default:
			return notReached
		}
	}
	if n.Logic == dataflow.Nand || n.Logic == dataflow.Nor {
		v = !v
	}
	m.nodeRuns[n.ID]++
	want := packet.PortFalse
	if v {
		want = packet.PortTrue
	}
	if p := n.Port(want); p != nil {
		return p.Index
	}
	m.drop(DropKey{n.Name + "." + want, ReasonUnconnected})
	return ended
}

// Counters is a snapshot of what the machine counted.
type Counters struct {
	Nodes map[string]uint64 // packets each node ran on (zero counts left out)
	Sinks map[string]uint64
	Drops map[DropKey]uint64
	// Counts are the count operations' counters, by label.
	Counts map[string]uint64
}

// Counters returns the counts so far.
func (m *Machine) Counters() Counters {
	c := Counters{Nodes: map[string]uint64{}, Sinks: map[string]uint64{}, Drops: map[DropKey]uint64{}, Counts: map[string]uint64{}}
	for k, v := range m.counts {
		c.Counts[k] = v
	}
	for _, n := range m.g.Nodes {
		if v := m.nodeRuns[n.ID]; v > 0 {
			c.Nodes[n.Name] = v
		}
		if v := m.sinks[n.ID]; v > 0 {
			c.Sinks[n.Name] = v
		}
	}
	for k, v := range m.drops {
		c.Drops[k] = v
	}
	return c
}

// DropKeys returns the drop keys sorted, for printing.
func (c Counters) DropKeys() []DropKey {
	keys := make([]DropKey, 0, len(c.Drops))
	for k := range c.Drops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Node != keys[j].Node {
			return keys[i].Node < keys[j].Node
		}
		return keys[i].Reason < keys[j].Reason
	})
	return keys
}

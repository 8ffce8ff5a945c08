package xdprun

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"

	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/packet"
)

// MetaSection is the ELF section of a compiled program that holds its
// Meta as JSON: the object carries what a runner needs to fill its maps
// and name its counters.
const MetaSection = ".nsc.meta"

// MetaVersion is the format of Meta; a runner refuses another.
const MetaVersion = 1

// Meta describes a generated program: its function, maps, counters and
// tables. Generate returns it and writes it into the C source (section
// MetaSection), so that the compiled object carries it.
type Meta struct {
	Version int    `json:"version"`
	Graph   string `json:"graph"`
	// Program is the XDP function; Counters and Lens its maps.
	Program  string `json:"program"`
	Counters string `json:"counters_map"`
	Lens     string `json:"lens_map"`
	// The counter block: NumEdges flow-edge counters, one per sink, one
	// per drop site, and Oversize's; NumCounters in all.
	NumCounters int      `json:"num_counters"`
	NumEdges    int      `json:"num_edges"`
	Nodes       []string `json:"nodes"` // by node ID
	Sinks       []Sink   `json:"sinks"`
	Drops       []Drop   `json:"drops"`
	// Counts are the count operations' labels, CountNodes[i] the nodes
	// (IDs) whose runs count label i.
	Counts     []string `json:"counts"`
	CountNodes [][]int  `json:"count_nodes"`
	// Flow gives the node runs from the counters.
	Flow   *flow.Flow  `json:"flow"`
	Tables []TableMeta `json:"tables"`
	// MaxFrame is the longest frame the program processes; longer ones
	// are passed to the kernel and counted under the Oversize counter.
	MaxFrame int `json:"max_frame"`
}

// Sink is a node where frames leave, and the XDP verdict they leave with.
type Sink struct {
	Node    string `json:"node"`
	Verdict string `json:"verdict"` // XDP_TX or XDP_PASS
}

// Drop is a drop site: a node (or node.port) and a reason.
type Drop struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// TableMeta is one table of the model: its spec, the BPF map that holds
// its entries and how (Mode).
type TableMeta struct {
	Index int               `json:"index"` // in the schema's tables
	Map   string            `json:"map"`
	Mode  string            `json:"mode"` // hash, lpm or scan
	Spec  *packet.TableSpec `json:"spec"`
	Used  bool              `json:"used"` // a lookup of the graph reads it
}

// Counter block offsets.
func (m *Meta) SinkBase() int { return m.NumEdges }
func (m *Meta) DropBase() int { return m.SinkBase() + len(m.Sinks) }

// Oversize is the index of the counter of frames longer than MaxFrame.
func (m *Meta) Oversize() int { return m.DropBase() + len(m.Drops) }

// Schema returns a schema holding just the tables' specs, in the model's
// order: enough for table.Load to read a table_add script for the
// program.
func (m *Meta) Schema() *packet.Schema {
	s := &packet.Schema{}
	for i := range m.Tables {
		s.Tables = append(s.Tables, &packet.TableDef{Spec: m.Tables[i].Spec})
	}
	return s
}

// ReadMeta reads the Meta of a compiled object.
func ReadMeta(obj string) (*Meta, error) {
	f, err := elf.Open(obj)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(MetaSection)
	if sec == nil {
		return nil, fmt.Errorf("%s: no %s section: not an object nsc compile --target xdp made", obj, MetaSection)
	}
	raw, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", obj, MetaSection, err)
	}
	return ParseMeta(obj, raw)
}

// ParseMeta reads a program description (Meta as JSON; name says whence,
// for errors) and refuses one another version wrote or inconsistent.
func ParseMeta(name string, raw []byte) (*Meta, error) {
	raw = bytes.TrimRight(raw, "\x00")
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %s: %v", name, MetaSection, err)
	}
	if m.Version != MetaVersion {
		return nil, fmt.Errorf("%s: program description version %d, this nsc reads %d: recompile", name, m.Version, MetaVersion)
	}
	if m.Flow == nil || m.NumEdges < 0 || len(m.Flow.In) != len(m.Nodes) || len(m.CountNodes) != len(m.Counts) || m.NumCounters != m.Oversize()+1 {
		return nil, fmt.Errorf("%s: %s: inconsistent program description", name, MetaSection)
	}
	for i := range m.Tables {
		t := &m.Tables[i]
		if t.Spec == nil || t.Index != i || t.Map == "" {
			return nil, fmt.Errorf("%s: table %d: inconsistent description", name, i)
		}
		if err := t.Spec.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if want := LayoutOf(t.Spec).Mode; t.Mode != want {
			return nil, fmt.Errorf("%s: table %s: mode %s, want %s", name, t.Spec.Name, t.Mode, want)
		}
	}
	return &m, nil
}

// Table layouts. Generate declares the maps and their key and value
// structs from a table's spec with these, and the runner encodes entries
// with the same functions: one layout, two users.

const (
	ModeHash  = "hash"  // exact keys wider than a word together: BPF_MAP_TYPE_HASH on the keys
	ModeSlots = "slots" // exact keys that fit a word: open addressing in a BPF_MAP_TYPE_ARRAY
	ModeLPM   = "lpm"   // one lpm key and exact ones: BPF_MAP_TYPE_LPM_TRIE
	ModeScan  = "scan"  // priorities (ternary, range, several lpm, or declared): an array scanned in priority order
)

type Layout struct {
	Mode string
	// Words[j] is key j's number of 64-bit words (1 or 2).
	Words []int
	// keyWords is the hash key's length in words; scan entries have 4
	// words per key word (value, mask, low, high).
	KeyWords int
	// slots is an open-addressing table's length (a power of two, at
	// least twice the table's size).
	Slots int
	// lpmOrder is the keys' order in an lpm key (exact keys, the lpm key
	// last), lpmOff their byte offsets in the data, lpmBytes the data's length.
	LPMOrder []int
	LPMOff   []int
	LPMBytes int
	// paramOff[a][i] is action a's parameter i's first word; paramWords
	// the most words an action takes (at least 1).
	ParamOff   [][]int
	ParamWords int
}

// WordsOf is the number of 64-bit words a value of width w bits takes.
func WordsOf(w int) int {
	if w > 64 {
		return 2
	}
	return 1
}

func LayoutOf(spec *packet.TableSpec) Layout {
	l := Layout{}
	lpms := -1
	for j, k := range spec.Keys {
		l.Words = append(l.Words, WordsOf(k.Width))
		l.KeyWords += WordsOf(k.Width)
		if k.Kind == packet.LPM {
			lpms = j
		}
	}
	switch {
	case spec.NeedsPriority() || len(spec.Keys) == 0:
		l.Mode = ModeScan
	case lpms >= 0:
		l.Mode = ModeLPM
		for j := range spec.Keys {
			if j != lpms {
				l.LPMOrder = append(l.LPMOrder, j)
			}
		}
		l.LPMOrder = append(l.LPMOrder, lpms)
		l.LPMOff = make([]int, len(spec.Keys))
		for _, j := range l.LPMOrder {
			l.LPMOff[j] = l.LPMBytes
			l.LPMBytes += (spec.Keys[j].Width + 7) / 8
		}
	default:
		l.Mode = ModeHash
		w := 0
		for _, k := range spec.Keys {
			w += k.Width
		}
		if w <= 64 {
			l.Mode, l.KeyWords = ModeSlots, 1
			l.Slots = 4
			for l.Slots < 2*TableSize(spec) {
				l.Slots *= 2
			}
		}
	}
	l.ParamWords = 1
	for _, a := range spec.Actions {
		var offs []int
		n := 0
		for _, p := range a.Params {
			offs = append(offs, n)
			n += WordsOf(p.Width)
		}
		l.ParamOff = append(l.ParamOff, offs)
		l.ParamWords = max(l.ParamWords, n)
	}
	return l
}

// putValue writes v as kw words, the high word first.
func putValue(b []byte, kw int, v packet.Value) []byte {
	if kw == 2 {
		b = binary.NativeEndian.AppendUint64(b, v.Hi)
	}
	return binary.NativeEndian.AppendUint64(b, v.Lo)
}

// value is an entry's action and parameters as the maps hold them.
func (l *Layout) Value(action int, params []packet.Value, spec *packet.TableSpec) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(action))
	b = binary.NativeEndian.AppendUint32(b, 0)
	ws := make([]byte, 8*l.ParamWords)
	for i, p := range params {
		if action < 0 || action >= len(spec.Actions) || i >= len(spec.Actions[action].Params) {
			break
		}
		kw := WordsOf(spec.Actions[action].Params[i].Width)
		off := 8 * l.ParamOff[action][i]
		copy(ws[off:], putValue(nil, kw, p))
	}
	return append(b, ws...)
}

// readValue reads a value putValue wrote in len(b)/8 words.
func readValue(b []byte) packet.Value {
	if len(b) == 16 {
		return packet.Value{Hi: binary.NativeEndian.Uint64(b), Lo: binary.NativeEndian.Uint64(b[8:])}
	}
	return packet.V(binary.NativeEndian.Uint64(b))
}

// readValue reads back an entry's action and parameters (value's).
func (l *Layout) readValue(b []byte, spec *packet.TableSpec) packet.Entry {
	e := packet.Entry{Action: int(binary.NativeEndian.Uint32(b))}
	if e.Action < 0 || e.Action >= len(spec.Actions) {
		return e
	}
	ws := b[8:]
	for i, p := range spec.Actions[e.Action].Params {
		off := 8 * l.ParamOff[e.Action][i]
		e.Params = append(e.Params, readValue(ws[off:off+8*WordsOf(p.Width)]))
	}
	return e
}

// unpackKeys undoes packet.TableSpec.PackKeys.
func unpackKeys(spec *packet.TableSpec, k uint64) []packet.KeyMatch {
	keys := make([]packet.KeyMatch, len(spec.Keys))
	for i := len(keys) - 1; i >= 0; i-- {
		w := spec.Keys[i].Width
		keys[i].Value = packet.V(k & (1<<w - 1))
		k >>= w
	}
	return keys
}

// hashKey is an exact entry's key: the packed keys, or each key's value
// in its words.
func (l *Layout) hashKey(e *packet.Entry, spec *packet.TableSpec) []byte {
	if l.Mode == ModeSlots { // packed as packet.TableSpec.PackKeys packs them
		vs := make([]packet.Value, len(e.Keys))
		for j := range e.Keys {
			vs[j] = e.Keys[j].Value
		}
		return binary.NativeEndian.AppendUint64(nil, spec.PackKeys(vs))
	}
	var b []byte
	for j := range l.Words {
		b = putValue(b, l.Words[j], e.Keys[j].Value)
	}
	return b
}

// lpmBits writes v's top width bits left-aligned into n bytes.
func lpmBits(v packet.Value, width int) []byte {
	n := (width + 7) / 8
	v = v.Shl(uint(8*n - width))
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(v.Lo)
		v = v.Shr(8)
	}
	return out
}

// lpmKey is an lpm entry's key: the prefix length over the exact keys and
// the lpm key's prefix, then the data.
func (l *Layout) lpmKey(e *packet.Entry, spec *packet.TableSpec) []byte {
	data := make([]byte, l.LPMBytes)
	prefix := 0
	for _, j := range l.LPMOrder {
		k := spec.Keys[j]
		copy(data[l.LPMOff[j]:], lpmBits(e.Keys[j].Value, k.Width))
		if k.Kind == packet.LPM {
			prefix += e.Keys[j].PrefixLen
		} else {
			prefix += 8 * ((k.Width + 7) / 8)
		}
	}
	data = append(data, make([]byte, l.LPMPad()-l.LPMBytes)...)
	return append(binary.NativeEndian.AppendUint32(nil, uint32(prefix)), data...)
}

// scanEntry is a priority entry: per key value, mask, low and high bound
// (table.Table's matcher), then the action and parameters.
func (l *Layout) scanEntry(e *packet.Entry, spec *packet.TableSpec) []byte {
	var b []byte
	for j, k := range spec.Keys {
		w := packet.Mask(k.Width)
		val, mask, lo, hi := packet.Value{}, w, packet.Value{}, w
		m := e.Keys[j]
		switch k.Kind {
		case packet.Exact:
			val = m.Value
		case packet.LPM:
			mask = packet.PrefixMask(k.Width, m.PrefixLen)
			val = m.Value.And(mask)
		case packet.Ternary:
			mask = m.Mask
			val = m.Value.And(m.Mask)
		case packet.Range:
			mask = packet.Value{}
			lo, hi = m.Lo, m.Hi
		}
		for _, v := range []packet.Value{val, mask, lo, hi} {
			b = putValue(b, l.Words[j], v)
		}
	}
	return append(b, l.Value(e.Action, e.Params, spec)...)
}

// readScanEntry reads back a priority entry scanEntry wrote, without
// its priority (the maps keep only the order it gave).
func (l *Layout) readScanEntry(b []byte, spec *packet.TableSpec) packet.Entry {
	keys := make([]packet.KeyMatch, len(spec.Keys))
	for j, k := range spec.Keys {
		var vs [4]packet.Value
		for i := range vs {
			vs[i], b = readValue(b[:8*l.Words[j]]), b[8*l.Words[j]:]
		}
		switch k.Kind {
		case packet.Exact:
			keys[j] = packet.KeyMatch{Value: vs[0]}
		case packet.LPM:
			keys[j] = packet.KeyMatch{Value: vs[0], PrefixLen: bits.OnesCount64(vs[1].Hi) + bits.OnesCount64(vs[1].Lo)}
		case packet.Ternary:
			keys[j] = packet.KeyMatch{Value: vs[0], Mask: vs[1]}
		case packet.Range:
			keys[j] = packet.KeyMatch{Lo: vs[2], Hi: vs[3]}
		}
	}
	e := l.readValue(b, spec)
	e.Keys = keys
	return e
}

// scanOrder is the order a priority table's entries are tried in:
// by priority, lower first, then insertion (table.Table's order).
func scanOrder(es []packet.Entry) []int {
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return es[order[a]].Priority < es[order[b]].Priority })
	return order
}

// IntervalMaps is the size of a table's interval index maps (file.go,
// intervalsC): at most two segments per entry and one per group, and the
// group slots packet lays out for as many groups as entries.
func IntervalMaps(size int) (segs, slots int) {
	slots = 4
	for slots < 2*size {
		slots *= 2
	}
	return 3*size + 1, slots
}

// MaxProbe bounds the linear probing of an open-addressing table: every
// entry lies within MaxProbe slots of its home slot (the runner refuses
// entries that would not), so a lookup that has not found its key after
// MaxProbe slots misses.
const MaxProbe = 32

// slotHash is an open-addressing table's hash of a packed key (the
// generated code computes the same).
func slotHash(k uint64) uint64 {
	k *= 0x9e3779b97f4a7c15
	return k ^ k>>29
}

// slotTable lays out the entries of an open-addressing table: per slot
// the packed key, the action, a used flag and the parameters.
func (l *Layout) slotTable(es []packet.Entry, spec *packet.TableSpec) ([][]byte, error) {
	n := l.Slots
	used := make([]bool, n)
	out := make([][]byte, n)
	empty := make([]byte, 16+8*l.ParamWords)
	for i := range out {
		out[i] = empty
	}
	for i := range es {
		k := binary.NativeEndian.Uint64(l.hashKey(&es[i], spec))
		h := slotHash(k)
		d := 0
		for ; d < MaxProbe; d++ {
			if !used[(h+uint64(d))&uint64(n-1)] {
				break
			}
		}
		if d == MaxProbe {
			return nil, fmt.Errorf("%s: more than %d entries collide in the table's slots", entryName(&es[i], i), MaxProbe)
		}
		j := (h + uint64(d)) & uint64(n-1)
		used[j] = true
		v := l.Value(es[i].Action, es[i].Params, spec)
		binary.NativeEndian.PutUint32(v[4:], 1) // used
		out[j] = append(binary.NativeEndian.AppendUint64(nil, k), v...)
	}
	return out, nil
}

func entryName(e *packet.Entry, i int) string {
	if e.Line > 0 {
		return fmt.Sprintf("entry at line %d", e.Line)
	}
	return fmt.Sprintf("entry %d", i)
}

// LPMPad is an lpm key's data length as the struct holds it: whole 32-bit
// words (the padding is zero in entries and lookups alike).
func (l *Layout) LPMPad() int { return (l.LPMBytes + 3) / 4 * 4 }

// TableSize is a table's number of entries as its map holds them.
func TableSize(spec *packet.TableSpec) int {
	if spec.Size > 0 {
		return spec.Size
	}
	return 1024
}

// Runs solves the flow for the frames each node ran on, from the
// counters' values (sum over CPUs).
func (m *Meta) Runs(sum []uint64) []uint64 {
	r := m.Flow.Runs(func(k flow.Counter) uint64 {
		i := -1
		switch k.Kind {
		case flow.CountSink:
			i = m.SinkBase() + k.Index
		case flow.CountDrop:
			i = m.DropBase() + k.Index
		case flow.CountEdge:
			i = k.Index
		}
		if i >= 0 && i < len(sum) {
			return sum[i]
		}
		return 0
	})
	if len(r) > len(m.Nodes) {
		r = r[:len(m.Nodes)]
	}
	for len(r) < len(m.Nodes) {
		r = append(r, 0)
	}
	return r
}

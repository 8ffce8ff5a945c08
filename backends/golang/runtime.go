package golang

import (
	"bytes"
	"fmt"
)

// pipeline writes the generated package's Pipeline: its state, sized for
// the graph, and the methods fastpath.Pipeline asks for. What does not
// depend on the graph (tables' checks, counter naming) is in package
// fastpath, compiled and tested on its own; the generated methods only
// hand it their arrays.
func (c *gen) pipeline(w *bytes.Buffer) {
	fmt.Fprintf(w, `// Pipeline runs frames through the graph. Its tables may be updated by the
// control plane while it runs (lookups read a snapshot, lock-free); the
// Pipeline itself is for one goroutine: give each worker its own, sharing
// the tables.
type Pipeline struct {
	pkt    *packet.Packet
	tables [%d]*table.Table // an array: one load less to a table
	keys   [%d]packet.Value

	Sunk    [len(SinkNames)]uint64 // frames out at each sink
	Dropped [len(DropSites)]uint64 // frames ended at each drop site
	// edges count the frames along the few edges the node runs do not
	// follow from (see runs).
	edges [%d]uint64
%s}

var _ fastpath.Pipeline = (*Pipeline)(nil)

// names name the counters, for package fastpath.
var names = fastpath.Names{Nodes: NodeNames[:], Sinks: SinkNames[:], Drops: DropSites[:], Counts: CountLabels[:], CountOf: countOf[:]}
`, len(c.s.Tables), max(c.maxKeys, 1), c.counters, c.atField()+c.statesField()+c.registersField())
	w.WriteString(`
// NewTables makes empty runtime tables, in Schema.Tables order; fill them
// with table.Load(Schema, …) or Table.Insert.
func NewTables() []*table.Table { return fastpath.NewTables(Schema) }

// New returns a pipeline over tables (in Schema.Tables order, as
// NewTables or table.Load(Schema, …) make them; nil: empty ones).
func New(tables []*table.Table) (*Pipeline, error) {
	tables, err := fastpath.CheckTables(Schema, tables)
	if err != nil {
		return nil, err
	}
	pl := &Pipeline{pkt: packet.NewPacket(Schema)}
	copy(pl.tables[:], tables)
` + c.atInit() + c.statesInit() + c.registersInit() + `	return pl, nil
}

// Tables are the pipeline's runtime tables.
func (pl *Pipeline) Tables() []*table.Table { return pl.tables[:] }

// SinkName names Result.Sink.
func (pl *Pipeline) SinkName(i int) string { return SinkNames[i] }

// DropSite names Result.Drop.
func (pl *Pipeline) DropSite(i int) fastpath.DropSite { return DropSites[i] }

// ProcessBatch runs every frame of a batch.
func (pl *Pipeline) ProcessBatch(frames []fastpath.Frame) {
	for i := range frames {
		f := &frames[i]
		f.Out = pl.Process(f.Buf, f.Off, f.Len)
	}
}

// Runs returns the frames each node ran on (by NodeNames index).
func (pl *Pipeline) Runs() [len(NodeNames)]uint64 { return pl.runs() }

// Counted returns the count operations' counters (by CountLabels index).
func (pl *Pipeline) Counted() (c [len(CountLabels)]uint64) {
	runs := pl.runs()
	names.Counted(runs[:], c[:])
	return c
}

// Each calls f for every non-zero counter, nodes in graph order.
func (pl *Pipeline) Each(f func(kind, name, reason string, n uint64)) {
	runs := pl.runs()
	names.Each(runs[:], pl.Sunk[:], pl.Dropped[:], f)
` + c.statesEach() + `}

func (pl *Pipeline) drop(d int) fastpath.Result {
	pl.Dropped[d]++
	return fastpath.Result{Sink: -1, Drop: int32(d)}
}

func (pl *Pipeline) sink(s int, data []byte) fastpath.Result {
	pl.Sunk[s]++
	return fastpath.Result{Sink: int32(s), Drop: -1, Data: data}
}

`)
}

// A pipeline from a sink on reads where the device left the headers.

func (c *gen) atField() string {
	if !c.fromSink {
		return ""
	}
	return "\t// At is where the device left the headers of the frames Process gets\n" +
		"\t// (none valid until it is set: every frame malformed).\n" +
		"\tAt *fastpath.At\n"
}

func (c *gen) atInit() string {
	if !c.fromSink {
		return ""
	}
	return "\tat := fastpath.NewAt()\n\tpl.At = &at\n"
}

// The keyed state of a graph with place operations: one fastpath.State
// each, with their timeouts and evictions among the drops, and a clock a
// caller may set. A graph without any gets none of it.

func (c *gen) statesField() string {
	if len(c.s.States) == 0 {
		return ""
	}
	return fmt.Sprintf("\tstates [%d]*fastpath.State // keyed state, in Schema.States order\n", len(c.s.States)) +
		"\tevent  []byte // a completed event with headroom, for a runtime call on it\n"
}

// The registers of a graph with load and store operations: the
// interpreter's runtime (table.Register), one per register.

func (c *gen) registersField() string {
	if len(c.s.Registers) == 0 {
		return ""
	}
	return fmt.Sprintf("\tregs [%d]*table.Register // in Schema.Registers order\n", len(c.s.Registers))
}

func (c *gen) registersInit() string {
	if len(c.s.Registers) == 0 {
		return ""
	}
	return "\tcopy(pl.regs[:], table.NewRegisters(Schema))\n"
}

func (c *gen) statesInit() string {
	if len(c.s.States) == 0 {
		return ""
	}
	return "\tfor i, d := range Schema.States {\n\t\tpl.states[i] = fastpath.NewState(d)\n\t}\n"
}

func (c *gen) statesEach() string {
	if len(c.s.States) == 0 {
		return ""
	}
	return "\tfastpath.EachState(pl.states[:], f)\n}\n\n" +
		"// States are the keyed states, in Schema.States order.\n" +
		"func (pl *Pipeline) States() []*fastpath.State { return pl.states[:] }\n\n" +
		"// SetClock gives the keyed state its time source (nil: time.Now).\n" +
		"func (pl *Pipeline) SetClock(now func() time.Time) {\n\tfor _, s := range pl.states {\n\t\ts.Clock = now\n\t}\n"
}

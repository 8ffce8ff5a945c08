package golang

// runtimeSrc is the part of every generated package that does not depend
// on the graph. MAXKEYS is replaced by the most keys a table has, TABLES by
// the number of tables, EDGES by the number of edge counters.
const runtimeSrc = `// Pipeline runs frames through the graph. Its tables may be updated by the
// control plane while it runs (lookups read a snapshot, lock-free); the
// Pipeline itself is for one goroutine: give each worker its own, sharing
// the tables.
type Pipeline struct {
	pkt    *packet.Packet
	tables [TABLES]*packet.Table // an array: one load less to a table
	keys   [MAXKEYS]packet.Value

	Sunk    [len(SinkNames)]uint64 // frames out at each sink
	Dropped [len(DropSites)]uint64 // frames ended at each drop site
	// edges count the frames along the few edges the node runs do not
	// follow from (see runs).
	edges [EDGES]uint64
}

var _ fastpath.Pipeline = (*Pipeline)(nil)

// NewTables makes empty runtime tables, in Schema.Tables order; fill them
// with packet.LoadTables(Schema, …) or Table.Insert.
func NewTables() []*packet.Table {
	ts := make([]*packet.Table, len(Schema.Tables))
	for i, t := range Schema.Tables {
		ts[i] = packet.NewTable(t.Spec)
	}
	return ts
}

// New returns a pipeline over tables (in Schema.Tables order, as
// NewTables or packet.LoadTables(Schema, …) make them; nil: empty ones).
func New(tables []*packet.Table) (*Pipeline, error) {
	if tables == nil {
		tables = NewTables()
	}
	if len(tables) != len(Schema.Tables) {
		return nil, fmt.Errorf("%d tables given, the fast path has %d", len(tables), len(Schema.Tables))
	}
	for i, t := range tables {
		if err := Schema.Tables[i].Spec.Shaped(t.Spec()); err != nil {
			return nil, fmt.Errorf("table %d: %v", i, err)
		}
	}
	pl := &Pipeline{pkt: packet.NewPacket(Schema)}
	copy(pl.tables[:], tables)
	return pl, nil
}

// Tables are the pipeline's runtime tables.
func (pl *Pipeline) Tables() []*packet.Table { return pl.tables[:] }

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
	for i, v := range pl.runs() {
		if countOf[i] > 0 {
			c[countOf[i]-1] += v
		}
	}
	return c
}

// Each calls f for every non-zero counter, nodes in graph order.
func (pl *Pipeline) Each(f func(kind, name, reason string, n uint64)) {
	for i, v := range pl.runs() {
		if v > 0 {
			f(fastpath.CountNode, NodeNames[i], "", v)
		}
	}
	for i, v := range pl.Sunk {
		if v > 0 {
			f(fastpath.CountSink, SinkNames[i], "", v)
		}
	}
	for i, v := range pl.Dropped {
		if v > 0 {
			f(fastpath.CountDrop, DropSites[i].Node, DropSites[i].Reason, v)
		}
	}
	for i, v := range pl.Counted() {
		if v > 0 {
			f(fastpath.CountLabel, CountLabels[i], "", v)
		}
	}
}

func (pl *Pipeline) drop(d int) fastpath.Result {
	pl.Dropped[d]++
	return fastpath.Result{Sink: -1, Drop: int32(d)}
}

func (pl *Pipeline) sink(s int, data []byte) fastpath.Result {
	pl.Sunk[s]++
	return fastpath.Result{Sink: int32(s), Drop: -1, Data: data}
}
`

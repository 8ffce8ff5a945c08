package gorun

import (
	"bytes"
	"encoding/gob"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/backends/golang/internal/udpfast"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

func newUDP(ts []*table.Table) (fastpath.Pipeline, error) { return udpfast.New(ts) }

// serveFrames runs frames through serve as a program would, and reads its
// answers back as Program.Run does.
func serveFrames(t *testing.T, st start, frames [][]byte) (*Result, error) {
	var in bytes.Buffer
	enc := gob.NewEncoder(&in)
	enc.Encode(st)
	for _, f := range frames {
		enc.Encode(frame{Data: f})
	}
	var out bytes.Buffer
	if err := serve(&in, &out, udpfast.Schema, newUDP); err != nil {
		return nil, err
	}
	return read(&out, len(frames))
}

// What the program answers is the interpreter's outcome on the same
// graph, frame by frame and in the counters.
func TestServeAsInterpreter(t *testing.T) {
	frames := testutil.UDPCorpus(t)
	got, err := serveFrames(t, start{Protocol: protocol}, frames)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(testutil.Graph(t, "UDPIPv4", "inet/udp.nsc"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{InProgress: map[string]int{}}
	for _, f := range frames {
		o := Output{}
		m.Run(f, func(sink *dataflow.Node, data []byte) { o = Output{sink.Name, bytes.Clone(data)} })
		want.Outputs = append(want.Outputs, o)
	}
	want.Counters = m.Counters()
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); diff != "" {
		t.Errorf("(-interpreter +served):\n%s", diff)
	}
	if len(got.Counters.Sinks) == 0 || len(got.Counters.Drops) == 0 {
		t.Errorf("the corpus reached no sink or no drop: %v", got.Counters)
	}
}

// A program built against another nsc's protocol, or given bad tables,
// says so instead of answering.
func TestServeRefuses(t *testing.T) {
	if _, err := serveFrames(t, start{Protocol: protocol + 1}, nil); err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Errorf("another protocol: %v", err)
	}
	if _, err := serveFrames(t, start{Protocol: protocol, TablesName: "t.tables", Tables: "table_add nope x => 1\n"}, nil); err == nil || !strings.Contains(err.Error(), "t.tables:1") {
		t.Errorf("bad tables: %v", err)
	}
	if _, err := read(strings.NewReader(""), 1); err == nil || !strings.Contains(err.Error(), "hello") {
		t.Errorf("no answer: %v", err)
	}
	var hi bytes.Buffer
	gob.NewEncoder(&hi).Encode(hello{protocol + 1})
	if _, err := read(&hi, 0); err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Errorf("another protocol's hello: %v", err)
	}
}

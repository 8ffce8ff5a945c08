package sim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/sim"
)

func machine(t *testing.T, src, graph string) *sim.Machine {
	t.Helper()
	g, _ := testutil.ModelSource(t, src).Graph(graph)
	mach, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mach
}

// outcome runs one frame and returns the sinks it reached, with the bytes.
func outcome(m *sim.Machine, frame []byte) map[string][]byte {
	out := map[string][]byte{}
	m.Run(frame, func(sink *dataflow.Node, data []byte) { out[sink.Name] = append([]byte(nil), data...) })
	return out
}

// A two-operand logic graph: a and b test the first two bytes; each O-node
// sends packets to a sink per outcome.
const logicModel = `
header h { a: 8  b: 8 }
lpg L {
  node Q { op input parse h  port out -> A, B }
  node A { op test h.a == 1  port true -> And, Or, Nand, Nor, Not  port false -> And, Or, Nand, Nor, Not }
  node B { op test h.b == 1  port true -> And, Or, Nand, Nor  port false -> And, Or, Nand, Nor }
  and And { port true -> AndT  port false -> AndF }
  or Or { port true -> OrT  port false -> OrF }
  nand Nand { port true -> NandT  port false -> NandF }
  nor Nor { port true -> NorT  port false -> NorF }
  not Not { port true -> NotT  port false -> NotF }
  node AndT { op emit }  node AndF { op emit }
  node OrT { op emit }   node OrF { op emit }
  node NandT { op emit } node NandF { op emit }
  node NorT { op emit }  node NorF { op emit }
  node NotT { op emit }  node NotF { op emit }
}`

func TestLogicNodes(t *testing.T) {
	m := machine(t, logicModel, "L")
	for _, c := range []struct {
		a, b byte
		want []string
	}{
		{0, 0, []string{"AndF", "OrF", "NandT", "NorT", "NotT"}},
		{0, 1, []string{"AndF", "OrT", "NandT", "NorF", "NotT"}},
		{1, 0, []string{"AndF", "OrT", "NandT", "NorF", "NotF"}},
		{1, 1, []string{"AndT", "OrT", "NandF", "NorF", "NotF"}},
	} {
		got := outcome(m, []byte{c.a, c.b})
		want := map[string][]byte{}
		for _, s := range c.want {
			want[s] = []byte{c.a, c.b}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a=%d b=%d (-want +got):\n%s", c.a, c.b, diff)
		}
	}
}

// An AND whose second operand only runs when the first is true: a false
// first operand decides it (short-circuit); a packet that reaches neither
// operand leaves it undecided, and it fires nothing.
const shortCircuit = `
header h { a: 8  b: 8 }
lpg L {
  node Q { op input parse h  port out -> Kind }
  node Kind { op switch h.a { 9 -> other, default -> checked }  port checked -> A  port other -> Elsewhere }
  node A { op test h.a == 1  port true -> B, Both  port false -> Both }
  node B { op test h.b == 1  port true -> Both  port false -> Both }
  and Both { port true -> Yes  port false -> No }
  node Yes { op emit }
  node No { op emit }
  node Elsewhere { op emit }
}`

func TestShortCircuit(t *testing.T) {
	m := machine(t, shortCircuit, "L")
	cases := map[[2]byte]string{{0, 1}: "No", {1, 0}: "No", {1, 1}: "Yes", {9, 1}: "Elsewhere"}
	for in, want := range cases {
		got := outcome(m, in[:])
		if len(got) != 1 || got[want] == nil {
			t.Errorf("%v: got %v, want only %s", in, got, want)
		}
	}
	c := m.Counters()
	if c.Nodes["B"] != 2 {
		t.Errorf("B ran %d times, want 2 (only when A is true)", c.Nodes["B"])
	}
	if c.Nodes["Both"] != 3 {
		t.Errorf("Both decided %d times, want 3 (not for the packet that went Elsewhere)", c.Nodes["Both"])
	}
}

// Spawn: a ping spawns a pong on a copy of the packet; the original ends
// where it was going.
const spawnModel = `
header i { type: 8 }
lpg L {
  node Q { op input parse i  port out -> Ping }
  node Ping { op test i.type == 8  port true -> Seen  spawn true -> Pong  port false -> Other }
  node Seen { op emit }
  node Other { op drop "not a ping" }
  node Pong { op set { i.type = 0 }  port out -> Out }
  node Out { op emit }
}`

func TestSpawn(t *testing.T) {
	m := machine(t, spawnModel, "L")
	got := outcome(m, []byte{8, 0xaa})
	want := map[string][]byte{"Seen": {8, 0xaa}, "Out": {0, 0xaa}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := outcome(m, []byte{3}); len(got) != 0 {
		t.Errorf("non-ping reached %v", got)
	}
	c := m.Counters()
	if c.Drops[sim.DropKey{Node: "Other", Reason: "not a ping"}] != 1 {
		t.Errorf("drops %v", c.Drops)
	}
}

// A spawn cycle ends at the spawn limit instead of looping.
func TestSpawnLimit(t *testing.T) {
	m := machine(t, `
header i { type: 8 }
lpg L {
  node Q { op input parse i  port out -> Again }
  node Again { op count "spin"  port out  spawn out -> Again }
}`, "L")
	outcome(m, []byte{1})
	c := m.Counters()
	if c.Nodes["Again"] != sim.MaxSpawn+1 {
		t.Errorf("Again ran %d times, want %d", c.Nodes["Again"], sim.MaxSpawn+1)
	}
	if c.Drops[sim.DropKey{Node: "Again", Reason: sim.ReasonSpawnLimit}] == 0 {
		t.Errorf("no spawn-limit drop: %v", c.Drops)
	}
}

// Every truncation of a frame and random bytes are dropped and counted,
// never a panic, and each packet ends somewhere that is counted.
func TestMalformedNeverPanics(t *testing.T) {
	g := udpGraph(t)
	m, err := sim.New(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames := testutil.UDPCorpus(t)
	for _, f := range frames {
		for n := 0; n <= len(f); n++ {
			m.Run(f[:n], func(*dataflow.Node, []byte) {})
		}
	}
	want := 0
	for _, f := range frames {
		want += len(f) + 1
	}
	if c := m.Counters(); total(c) != uint64(want) {
		t.Errorf("%d packets accounted for, want %d: %v", total(c), want, c)
	}
}

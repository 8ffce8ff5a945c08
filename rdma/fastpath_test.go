package rdma_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/rdma/naaackfast"
	"github.com/dragonet-go/nsc/rdma/naafast"
)

// pair is a responder and its ACK maker, generated and interpreted.
type pair struct {
	resp fastpath.Pipeline
	ack  *naaackfast.Pipeline
	r    *responder
	buf  []byte
}

func newPair(t testing.TB) *pair {
	t.Helper()
	return newPairOf(t, naafast.Schema, func(ts []*table.Table) (fastpath.Pipeline, error) { return naafast.New(ts) }, newResponder(t))
}

// newPairOf is the generated responder New makes (of schema s) with the
// test's tables, against r.
func newPairOf(t testing.TB, s *packet.Schema, mk func([]*table.Table) (fastpath.Pipeline, error), r *responder) *pair {
	t.Helper()
	ts, err := table.Load(s, "tables", strings.NewReader(tablesText))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := mk(ts)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := naaackfast.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &pair{resp: resp, ack: ack, r: r}
}

// step runs a frame through both: the responder's outcomes, and, for a
// message or reply, NAAAck's on it, must be equal.
func (p *pair) step(t testing.TB, i int, frame []byte) difftest.Outcome {
	t.Helper()
	want, got := difftest.Interp(p.r.mach, bytes.Clone(frame)), difftest.Fast(p.resp, frame, &p.buf)
	if want != got {
		t.Fatalf("frame %d: interpreter %s, fast path %s (bytes equal: %v)", i, want.Where, got.Where, want.Data == got.Data)
	}
	if want.Where == "sink RxMemory" || want.Where == "sink RxReply" {
		out, _ := hex.DecodeString(want.Data)
		if w, g := difftest.Interp(p.r.ack, bytes.Clone(out)), difftest.Fast(p.ack, out, &p.buf); w != g {
			t.Fatalf("frame %d: NAAAck: interpreter %s %s, fast path %s %s", i, w.Where, w.Data, g.Where, g.Data)
		}
	}
	return want
}

func (p *pair) counters(t *testing.T) {
	t.Helper()
	if diff := cmp.Diff(p.r.mach.Counters(), golang.Counters(p.resp)); diff != "" {
		t.Errorf("responder counters differ (-interp +fast path):\n%s", diff)
	}
	if diff := cmp.Diff(p.r.ack.Counters(), golang.Counters(p.ack)); diff != "" {
		t.Errorf("NAAAck counters differ (-interp +fast path):\n%s", diff)
	}
}

// TestFastPathAgainstInterpreter: the generated responder and ACK maker
// against the interpreter on the crafted traffic, each scenario on fresh
// state: the same replies, the same messages (placed bytes), the same
// counters.
func TestFastPathAgainstInterpreter(t *testing.T) { diffScenarios(t, scenarios(), newPair) }

func diffScenarios(t *testing.T, sc map[string][]step, mk func(testing.TB) *pair) {
	for _, name := range slices.Sorted(maps.Keys(sc)) {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			for i, s := range sc[name] {
				p.step(t, i, s.frame)
			}
			p.counters(t)
		})
	}
}

// TestFastPathSynthesized: every crafted frame, then copies with a random
// byte changed or cut short, through one long-lived pair: state carried
// across all of them, the same outcome for every frame, nothing panics.
func TestFastPathSynthesized(t *testing.T) {
	diffSynthesized(t, scenarios(), []string{"in order", "lost and resent", "PSN wrap", "MRSP send", "IPv6", "wrong opcode sequence"}, newPair)
}

// diffSynthesized runs 3,000 frames made from the named scenarios' through
// one pair.
func diffSynthesized(t *testing.T, sc map[string][]step, names []string, mk func(testing.TB) *pair) {
	rnd := rand.New(rand.NewPCG(26, 2))
	var frames [][]byte
	for _, name := range names {
		for _, s := range sc[name] {
			frames = append(frames, s.frame)
		}
	}
	p := mk(t)
	where := map[string]int{}
	for i := range 3000 {
		f := bytes.Clone(frames[rnd.IntN(len(frames))])
		switch rnd.IntN(4) {
		case 0:
			f[rnd.IntN(len(f))] ^= byte(1 + rnd.IntN(255))
		case 1:
			f = f[:rnd.IntN(len(f))]
		case 2: // a transport byte changed, the ICRC right again (IPv4 frames)
			if f[12] == 0x08 {
				f[42+rnd.IntN(12)] ^= byte(1 + rnd.IntN(255))
				binary.LittleEndian.PutUint32(f[len(f)-4:], packet.ICRC(f, 14, 42, len(f), false))
			}
		}
		where[p.step(t, i, f).Where]++
	}
	p.counters(t)
	t.Logf("outcomes: %v", where)
}

// FuzzResponderFastPath: any frame through the generated responder and
// ACK maker and through the interpreter, state carried across inputs: the
// same outcome and bytes, and nothing panics.
func FuzzResponderFastPath(f *testing.F) {
	for _, steps := range scenarios() {
		for _, s := range steps {
			f.Add(s.frame)
		}
	}
	p := newPair(f)
	f.Fuzz(func(t *testing.T, frame []byte) { p.step(t, 0, frame) })
}

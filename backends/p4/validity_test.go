package p4_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// p4c's check of header validity (frontends/p4/simplifyDefUse.cpp,
// HeaderDefinitions), written out for the programs p4run_test.go parses:
// `accessing a field of a potentially invalid header`. It knows, for each
// header, valid, invalid or maybe at each point of the program's text:
// the parser's headers start invalid and extract makes them valid (parser
// states meet at the intersection, to a fixpoint); the control's start
// valid (an inout parameter); setValid and setInvalid set them; the two
// sides of an if, the cases of a switch and the actions of a table meet
// as "maybe" where they disagree, a side that returns included; and inside
// an if or switch statement whose condition calls h.isValid(), h counts as
// valid (and only there: an early `if (!h.isValid()) { return; }` does not
// help the code after it). A read or write of a field of a header that is
// not valid at that point is reported.

type validity int8

const (
	vNo validity = iota
	vYes
	vMaybe
)

// vstate is the analysis' knowledge at one point.
type vstate struct {
	hdr       map[string]validity
	notReport map[string]bool
}

func (s vstate) clone() vstate {
	return vstate{maps.Clone(s.hdr), maps.Clone(s.notReport)}
}

// meet is where two ways come together: a header both agree on keeps
// that, the others are maybe. The isValid() exemptions are the caller's.
func (s vstate) meet(o vstate) vstate {
	out := vstate{map[string]validity{}, map[string]bool{}}
	for h, v := range s.hdr {
		if o.hdr[h] != v {
			v = vMaybe
		}
		out.hdr[h] = v
	}
	return out
}

type vcheck struct {
	prog        *program
	st          vstate
	unreachable bool
	report      bool
	found       []string
}

// invalidHeaderAccesses lists, as p4c would warn, every access to a field
// of a header that may be invalid there.
func invalidHeaderAccesses(prog *program) []string {
	c := &vcheck{prog: prog}
	c.parser()
	c.st = vstate{c.all(vYes), map[string]bool{}}
	c.unreachable, c.report = false, true
	c.stmts(prog.apply)
	return c.found
}

// all is every header instance at v.
func (c *vcheck) all(v validity) map[string]validity {
	out := map[string]validity{}
	for _, f := range c.prog.structs[c.prog.hdrType] {
		out["hdr."+f.name] = v
	}
	return out
}

// parser runs the states to a fixpoint without reporting, then once more
// from each state's input to report.
func (c *vcheck) parser() {
	in := map[string]vstate{"start": {c.all(vNo), map[string]bool{}}}
	todo := []string{"start"}
	for len(todo) > 0 {
		s := todo[0]
		todo = todo[1:]
		c.st, c.report = in[s].clone(), false
		for _, next := range c.state(s) {
			old, seen := in[next]
			if !seen {
				in[next] = c.st.clone()
				todo = append(todo, next)
				continue
			}
			if m := old.meet(c.st); !maps.Equal(m.hdr, old.hdr) {
				in[next] = m
				todo = append(todo, next)
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(in)) {
		c.st, c.report = in[s].clone(), true
		c.state(s)
	}
}

// state runs parser state s and returns the states it goes to.
func (c *vcheck) state(s string) []string {
	var next []string
	for _, x := range c.prog.states[s] {
		tr, ok := x.(sTransition)
		if !ok {
			c.stmt(x)
			continue
		}
		if tr.key == nil {
			next = append(next, tr.to)
			continue
		}
		c.expr(tr.key)
		for _, k := range tr.cases {
			next = append(next, k.to)
		}
		if tr.hasDef {
			next = append(next, tr.dflt)
		}
	}
	return slices.DeleteFunc(next, func(s string) bool { return s == "accept" || s == "reject" })
}

func (c *vcheck) stmts(body []stmt) {
	for _, s := range body {
		if c.unreachable {
			return
		}
		c.stmt(s)
	}
}

func (c *vcheck) stmt(s stmt) {
	switch s := s.(type) {
	case sBlock:
		c.stmts(s.body)
	case sReturn:
		c.unreachable = true
	case sDecl:
		if s.init != nil {
			c.expr(s.init)
		}
	case sAssign:
		c.expr(s.lhs)
		c.expr(s.rhs)
	case sCall:
		c.call(s.call)
	case sIf:
		before := maps.Clone(c.st.notReport)
		c.expr(s.cond)
		after := c.st.clone()
		c.stmts(s.then)
		thenDead := c.unreachable
		then := c.st
		c.st, c.unreachable = after, false
		c.stmts(s.els)
		c.unreachable = thenDead && c.unreachable
		c.st = c.st.meet(then)
		c.st.notReport = before
	case sSwitch:
		before := maps.Clone(c.st.notReport)
		c.table(s.table)
		after := c.st.clone()
		var out *vstate
		dead, dflt := true, false
		for _, k := range s.cases {
			dflt = dflt || slices.Contains(k.labels, "default")
			c.st, c.unreachable = after.clone(), false
			c.stmts(k.body)
			dead = dead && c.unreachable
			if out == nil {
				out = &c.st
			} else {
				m := out.meet(c.st)
				out = &m
			}
		}
		c.st, c.unreachable = after, false
		if out != nil {
			c.st, c.unreachable = *out, dead && dflt
			if !dflt {
				c.st = c.st.meet(after)
			}
		}
		c.st.notReport = before
	}
}

// table applies table t: its keys are read, then each action runs from
// there and they meet.
func (c *vcheck) table(name string) {
	t := c.prog.tables[name]
	for _, k := range t.keys {
		c.expr(k)
	}
	after := c.st.clone()
	var out *vstate
	for _, a := range t.actions {
		c.st = after.clone()
		c.action(a)
		if out == nil {
			out = &c.st
		} else {
			m := out.meet(c.st)
			out = &m
		}
	}
	if out != nil {
		c.st = *out
		c.st.notReport = after.notReport
	}
}

func (c *vcheck) action(name string) {
	if a := c.prog.actions[name]; a != nil {
		dead := c.unreachable
		c.stmts(a.body)
		c.unreachable = dead
	}
}

func (c *vcheck) call(e eCall) {
	h, method, _ := cutLast(e.fn)
	switch method {
	case "isValid":
		c.st.notReport[h] = true
		return
	case "setValid":
		c.st.hdr[h] = vYes
		delete(c.st.notReport, h)
		return
	case "setInvalid":
		c.st.hdr[h] = vNo
		delete(c.st.notReport, h)
		return
	case "apply":
		c.table(h)
		return
	}
	if e.fn == "packet.extract" {
		h := e.args[0].(eRef).path
		for _, a := range e.args[1:] {
			c.expr(a)
		}
		c.st.hdr[h] = vYes
		delete(c.st.notReport, h)
		return
	}
	for _, a := range e.args {
		c.expr(a)
	}
	c.action(e.fn)
}

// cutLast splits a.b.c into a.b and c.
func cutLast(path string) (string, string, bool) {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}

// expr visits e in evaluation order.
func (c *vcheck) expr(e expr) {
	switch e := e.(type) {
	case eRef:
		c.field(e.path)
	case eCall:
		c.call(e)
	case eSlice:
		c.expr(e.x)
	case eCast:
		c.expr(e.x)
	case eUn:
		c.expr(e.x)
	case eBin:
		c.expr(e.a)
		c.expr(e.b)
	}
}

// field checks an access to path, when it is a header's field.
func (c *vcheck) field(path string) {
	h, ok := headerOf(path)
	if !ok || !c.report || c.st.notReport[h] {
		return
	}
	switch c.st.hdr[h] {
	case vNo:
		c.found = append(c.found, fmt.Sprintf("%s: a field of an invalid header %s", path, h))
	case vMaybe:
		c.found = append(c.found, fmt.Sprintf("%s: a field of a potentially invalid header %s", path, h))
	}
}

// The check itself, on a program of its own: a header extracted on one of
// two ways into a parser state, a field read after an if that may set the
// header invalid, and after an early return on !isValid() (p4c takes that
// return's side into the meet as well) are reported; reads inside an if
// testing the header valid, and before any setInvalid, are not.
func TestInvalidHeaderCheck(t *testing.T) {
	const src = `
header h_t { bit<8> f; }
struct headers_t { h_t a; h_t b; }
struct meta_t { bit<8> x; }
parser ParserImpl(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.a);
        transition select(hdr.a.f) {
            1: withB;
            default: join;
        }
    }
    state withB {
        packet.extract(hdr.b);
        transition join;
    }
    state join {
        transition select(hdr.b.f) {
            0: accept;
            default: accept;
        }
    }
}
control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.x = hdr.a.f;
        if (hdr.b.f == 1) {
            hdr.a.setInvalid();
        }
        meta.x = hdr.b.f;
        if (hdr.a.isValid()) {
            meta.x = hdr.a.f;
        } else {
            meta.x = hdr.a.f + 1;
        }
        if (!hdr.a.isValid()) {
            return;
        }
        hdr.a.f = 2;
    }
}
`
	parsed, err := parseProgram(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"hdr.b.f: a field of a potentially invalid header hdr.b",
		"hdr.a.f: a field of a potentially invalid header hdr.a",
	}
	if diff := cmp.Diff(want, invalidHeaderAccesses(parsed)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// No golden program touches a field of a header p4c cannot prove valid
// there (lb-2026's reads of nd_ns after the punt path's pops were three
// p4test warnings).
func TestNoInvalidHeaderAccess(t *testing.T) {
	for _, gc := range golden {
		t.Run(name(gc.version, gc.arch), func(t *testing.T) {
			prog, _, _, err := build(t, "ejfat/"+gc.version+".nsc", gc.lpg, gc.prg, gc.arch)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parseProgram(string(prog.Source))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range invalidHeaderAccesses(parsed) {
				t.Error(f)
			}
		})
	}
}

// guardModel pops ethernet on one path and udp on another, then, on the
// ways that meet after them, reads ethernet (there, as the analysis
// knows) and udp (maybe missing: a malformed drop), patches udp's checksum
// and verifies tag's where they may be missing.
const guardModel = tagPreamble + `
lpg L {
    node RxQueue { op input  port out -> Eth }
    node Eth { op extract ethernet  port true -> Type  port false -> Bad }
    node Type { op test ethernet.type == 0x88b5  port true -> Tag  port false -> IPv4 }
    node Tag { op extract tag  port true -> TagSum  port false -> Bad }
    node IPv4 { op extract ipv4  port true -> Proto  port false -> Bad }
    node Bad { op drop "parse" }
    node Proto { op test ipv4.proto == 17  port true -> UDP  port false -> Strip }
    node UDP { op extract udp  port true -> Ttl  port false -> Bad }
    node Strip { op test ipv4.ttl == 0  port true -> PopEth  port false -> Ttl }
    node PopEth { op pop ethernet  port out -> TxQueue }
    node Ttl { op test ipv4.ttl < 8  port true -> HasUdp  port false -> Dst }
    node HasUdp { op test valid(udp)  port true -> PopUdp  port false -> TagSum }
    node PopUdp { op pop udp  port out -> Dst }
    node TagSum { op checksum verify tag  port true -> TxQueue  port false -> BadSum }
    node BadSum { op drop "bad sum" }
    node Dst { op set { ipv4.dst = ipv4.src } update ipv4, udp  port out -> Port }
    node Port { op test udp.dport == 53 || ethernet.type == 0x88b5  port true -> TxQueue  port false -> Drop }
    node Drop { op drop "port" }
    node TxQueue { op emit }
}`

// TestCompilerGuards: on guardModel the generated code tests, for p4c,
// ethernet and udp before Port (its else the malformed drop), and udp and
// tag before summing their bytes; nothing p4c would warn about is left,
// and the frames go as in the interpreter (the P4 interpreter stops on any
// field of an invalid header).
func TestCompilerGuards(t *testing.T) {
	m := testutil.ModelSource(t, guardModel)
	frames := coverageFrames(3000)
	for _, arch := range []string{p4.XSA, p4.V1Model} {
		prog, parsed, run, mach := modelMachines(t, m, "L", arch, "")
		for _, want := range []string{
			`if \(hdr\.udp\.isValid\(\) && hdr\.ethernet\.isValid\(\)\) \{`,
			`bit<16> sum_udp = 0;\s+if \(hdr\.udp\.isValid\(\)\) \{`,
			`bit<16> sum_TagSum = 0;\s+if \(hdr\.tag\.isValid\(\)\) \{`,
		} {
			if !regexp.MustCompile(want).Match(prog.Source) {
				t.Errorf("%s: the program lacks %s, which this test means to exercise", arch, want)
			}
		}
		for _, f := range invalidHeaderAccesses(parsed) {
			t.Errorf("%s: %s", arch, f)
		}
		_, ends := compareP4(t, arch, run, mach, frames, true)
		for _, end := range []string{"sent", "parse", "port", "malformed", "bad sum"} {
			if ends[end] < 10 {
				t.Errorf("%s: only %d frames end %q: %v", arch, ends[end], end, ends)
			}
		}
		if n := mach.Counters().Nodes["PopEth"]; n < 10 {
			t.Errorf("%s: only %d frames pop ethernet", arch, n)
		}
	}
}

package lang_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dragonet-go/nsc/lang"
	"github.com/dragonet-go/nsc/models"
)

// load loads main.nsc from an in-memory file system, with the shipped
// library behind it.
func load(files map[string]string) (*lang.Model, error) {
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	ld := lang.Loader{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(fsys, name) }, Library: models.FS}
	return ld.Load("main.nsc")
}

const udpHeaders = `include "lib/inet.nsc"
`

// Each case is a broken model and the exact first error it must give.
var errorCases = []struct {
	name, src, want string
}{
	{"syntax", "header h { a: 8 b 8 }",
		`main.nsc:1:19: unexpected token "8" (expected ":" (<int> | ("bytes" "(" Expr ")")) ChecksumAttr? ";"?)`},
	{"= for ==", "header h { a: 8 }\nlpg G {\n node Q { op input parse h port out -> T }\n node T { op test h.a = 8 port true port false }\n}",
		`main.nsc:4:23: unexpected token "=" (expected "}"); a comparison is written ==`},
	{"switch without braces", "// é\n" + udpHeaders + "lpg G {\n node Q { op input parse ethernet port true -> S port false }\n node S {\n  op switch ethernet.type 2048 -> v4, default -> other\n  port v4 port other\n }\n}",
		`main.nsc:6:27: unexpected token "2048" (expected "{" (Case ","?)* "}")`},
	{"switch without braces, one line", udpHeaders + "lpg G {\n node Q { op input parse ethernet port true -> S port false }\n  node S { op switch ethernet.type 2048 -> v4 port v4 }\n}",
		`main.nsc:4:36: unexpected token "2048" (expected "{" (Case ","?)* "}")`},
	{"comment not closed", "header h { a: 8 } /* a: 8 }",
		"main.nsc:1:19: comment /* is not closed"},
	{"unknown field", udpHeaders + "lpg G {\n node Q { op input port out -> T }\n node T { op test ipv4.protocol == 17 port true port false }\n}",
		"main.nsc:4:19: header ipv4 has no field protocol (it has version, ihl, dscp_ecn, total_len, id, flags, frag, ttl, proto, checksum, src, dst, options)"},
	{"popcount of a condition", udpHeaders + "metadata m { n: 8 }\nlpg G {\n node Q { op input port out -> T }\n node T { op set { m.n = popcount(valid(udp)) } port out }\n}",
		"main.nsc:5:26: popcount needs a value, valid(udp) is a condition"},
	{"unknown header", "lpg G {\n node Q { op input parse eth port out }\n}",
		"main.nsc:2:14: unknown header eth"},
	{"unknown node", udpHeaders + "lpg G {\n node Q { op input port out -> Nowhere }\n}",
		"main.nsc:3:32: node Q: port out: unknown node Nowhere"},
	{"duplicate node", "lpg G {\n node Q { op input port out }\n node Q { op emit }\n}",
		"main.nsc:3:2: graph G: node Q declared twice"},
	{"duplicate header", "header h { a: 8 }\nheader h { b: 8 }",
		"main.nsc:2:1: header h declared twice, differently: at main.nsc:1:1 its field 1 is a: 8"},
	{"duplicate header, longer", "header h { a: 8 }\nheader h { a: 8 b: 8 }",
		"main.nsc:2:1: header h declared twice, differently: at main.nsc:1:1 it has no field b"},
	{"duplicate header as metadata", "header h { a: 8 }\nmetadata h { a: 8 }",
		"main.nsc:2:1: metadata h declared twice, differently: at main.nsc:1:1 it is header"},
	{"duplicate header, other checksum", "header h { a: 16 c: 16 @checksum(l4, optional) }\nheader h { a: 16 c: 16 @checksum(l4) }",
		"main.nsc:2:1: header h declared twice, differently: at main.nsc:1:1 its checksum is c @checksum(l4, optional)"},
	{"duplicate header, other length", "header h { n: 8 v: bytes(n) }\nheader h { n: 8 v: bytes(n + 1) }",
		"main.nsc:2:26: header h declared twice, differently: at main.nsc:1:1 its length is n"},
	{"checksum rule of no header", "header h @checksum(l4)",
		"main.nsc:1:1: header h: no such header to set the checksum rule of"},
	{"checksum rule without a checksum", "header h { a: 16 }\nheader h @checksum(l4)",
		"main.nsc:2:1: header h has no checksum field (declared at main.nsc:1:1)"},
	{"checksum rule of metadata", "metadata m { a: 16 }\nmetadata m @checksum(l4)",
		"main.nsc:2:1: metadata m has no checksum"},
	{"checksum rule of another kind", "header h { a: 16 c: 16 @checksum(l4) }\nheader h @checksum(message)",
		"main.nsc:2:10: header h: its checksum is c @checksum(l4) (declared at main.nsc:1:1); a rule keeps the kind"},
	{"checksum rules that disagree", "header h { a: 16 c: 16 @checksum(l4) }\nheader h @checksum(l4)\nheader h @checksum(l4, optional)",
		"main.nsc:3:1: header h: checksum rule set twice, differently (at main.nsc:2:1)"},
	{"unknown table", "lpg G {\n node Q { op input port out -> L }\n node L { op lookup routes }\n}",
		"main.nsc:3:14: unknown table routes"},
	{"unknown action", "header h { a: 8 }\ntable t {\n key { h.a: exact }\n actions { fwd }\n default fwd\n}",
		"main.nsc:4:2: table t: unknown action fwd"},
	{"unknown match kind", "header h { a: 8 }\naction nop() {}\ntable t {\n key { h.a: fuzzy }\n actions { nop }\n default nop\n}",
		"main.nsc:4:8: table t: key h.a: unknown match kind fuzzy (want exact, lpm, ternary or range)"},
	{"port not connected", "header h { a: 8 }\nlpg G {\n node Q { op input port out -> T }\n node T { op test h.a == 1 port true }\n}",
		"main.nsc:4:2: node T: port false of test is not connected (declare `port false` to end packets there)"},
	{"port the op lacks", "lpg G {\n node Q { op input port out port extra }\n}",
		"main.nsc:2:29: node Q: input has no port extra (it has out)"},
	{"cycle", "lpg G {\n node Q { op input port out -> A }\n node A { op nop port out -> B }\n node B { op nop port out -> A }\n}",
		"main.nsc:3:2: graph G: cycle A -> B -> A (only spawn edges may close a cycle)"},
	{"constant too wide", udpHeaders + "lpg G {\n node Q { op input port out -> T }\n node T { op test ipv4.proto == 300 port true port false }\n}",
		"main.nsc:4:19: constant 300 does not fit in ipv4.proto (8 bits)"},
	{"include not found", `include "nope.nsc"`,
		`main.nsc:1:1: include "nope.nsc": file does not exist`},
	{"bad layout", "header lb 'L:8,B:,V:8'",
		`main.nsc:1:1: header lb: layout field 2 "B:": want NAME:BITS`},
	{"unknown attribute", "lpg G {\n node Q [fast] { op input port out }\n}",
		"main.nsc:2:9: node Q: unknown attribute fast (want software, hardware, source, sink, program, host or rule)"},
	{"host not an emit", "lpg G {\n node Q [host] { op input port out }\n}",
		"main.nsc:2:9: node Q: host marks an emit node"},
	{"program not a sink", "lpg G {\n node Q [software, program] { op input port out }\n}",
		"main.nsc:2:9: node Q: program marks a sink"},
	{"rule not hardware", "prg P {\n node Q [software, rule] { op set { } port out }\n}",
		"main.nsc:2:9: node Q: rule marks a hardware node inside a pipeline (not a source or sink)"},
	{"field width", "header h { a: 0 }",
		"main.nsc:1:12: header h: field a: width 0 is not 1..128 bits"},
	{"not whole bytes", "header h { a: 3 }",
		"main.nsc:1:1: header h is 3 bits long, not a whole number of bytes"},
	{"variable field not last", "header h { n: 8 opts: bytes(n) tail: 8 }",
		"main.nsc:1:32: header h: field tail follows variable-length field opts; it must be the last field"},
	{"cannot run", "lpg G {\n node Q { op input port out }\n node Lost { op emit }\n}",
		"main.nsc:3:2: node Lost cannot run: no edge leads to it and it is not a source"},
	{"not with two operands", "header h { a: 8 }\nlpg G {\n node Q { op input port out -> A, B }\n node A { op test h.a == 1 port true -> N port false -> N }\n node B { op test h.a == 2 port true -> N port false -> N }\n not N { port true port false }\n}",
		"main.nsc:6:2: not node N has 2 operands, want 1"},
	{"no op", "lpg G {\n node Q { port out }\n}",
		"main.nsc:2:2: node Q has no op (every F-node does something; use `op nop` to pass packets on)"},
	{"unknown param", "header h { a: 8 }\naction set(v: 8) { h.a = w }",
		"main.nsc:2:26: unknown name w (not a parameter; fields are written header.field)"},
	{"default not an action of the table", "header h { a: 8 }\naction a1() {}\naction a2() {}\ntable t {\n key { h.a: exact }\n actions { a1 }\n default a2\n}",
		"main.nsc:7:10: table t: default action a2 is not one of its actions"},
	{"switch without default", "header h { a: 8 }\nlpg G {\n node Q { op input port out -> S }\n node S { op switch h.a { 1 -> one } port one }\n}",
		"main.nsc:4:14: switch h.a has no default (add `default -> PORT`)"},
	{"checksum on a header without one", udpHeaders + "lpg G {\n node Q { op input port out -> C }\n node C { op checksum verify ethernet port true port false }\n}",
		"main.nsc:4:14: checksum ethernet: header ethernet has no field marked @checksum"},
	{"prefix longer than field", udpHeaders + "lpg G {\n node Q { op input port out -> T }\n node T { op test ipv4.dst in 10.0.0.0/33 port true port false }\n}",
		"main.nsc:4:31: prefix length 33: longer than ipv4.dst (32 bits)"},
	{"unknown limit", "prg P {\n limits { entries 5 }\n node Q { op input port out }\n}",
		"main.nsc:2:11: prg P: unknown limit entries (want tables, table_size, key_bits, action_bits, place_buffer, place_memory, place_events, payload_bytes, register_entries, register_bits)"},
	{"push extra on a fixed header", udpHeaders + "lpg G {\n node Q { op input port out -> P }\n node P { op push udp extra 4 port out -> E }\n node E { op emit }\n}",
		"main.nsc:4:14: push udp extra 4: udp has no variable-length field"},
	{"test of a value", udpHeaders + "lpg G {\n node Q { op input port out -> T }\n node T { op test ipv4.ttl port true port false }\n}",
		"main.nsc:4:19: test ipv4.ttl: want a condition, got a value (compare it, e.g. ipv4.ttl != 0)"},
	{"state without key", "header h { a: 8 }\nstate s {\n buffer h.a\n}",
		"main.nsc:2:1: state s has no key (add `key { EXPR, … }`)"},
	{"state without buffer", "header h { a: 8 }\nstate s {\n key { h.a }\n}",
		"main.nsc:2:1: state s has no buffer length (add `buffer EXPR`, the whole event's length)"},
	{"state empty key", "header h { a: 8 }\nstate s {\n key { }\n buffer h.a\n}",
		"main.nsc:3:2: state s: an empty key (name what tells its entries apart)"},
	{"state key twice", "header h { a: 8 }\nstate s {\n key { h.a }\n key { h.a }\n buffer h.a\n}",
		"main.nsc:4:2: state s: key given twice"},
	{"state key a condition", "header h { a: 8 }\nstate s {\n key { h.a == 1 }\n buffer h.a\n}",
		"main.nsc:3:8: state s: key h.a == 1: want a value, not a condition"},
	{"state unknown field", "header h { a: 8 }\nstate s {\n key { h.b }\n buffer h.a\n}",
		"main.nsc:3:8: header h has no field b (it has a)"},
	{"state timeout without unit", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n timeout 500\n}",
		"main.nsc:5:10: state s: timeout 500: want a duration (ns, us, ms or s)"},
	{"state timeout too long", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n timeout 2000000 s\n}",
		"main.nsc:5:10: state s: timeout 2000000 s: want at most 2^50 ns (13 days)"},
	{"state max too large", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n max 2000000 GiB\n}",
		"main.nsc:5:6: state s: max 2000000 GiB: want at most 2^50 bytes (1 PiB)"},
	{"state events with a unit", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n events 10 GiB\n}",
		"main.nsc:5:9: state s: events 10 GiB: want a number of events, no unit"},
	{"state max in seconds", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n max 1 s\n}",
		"main.nsc:5:6: state s: max 1 s: want bytes (B, KiB, MiB or GiB)"},
	{"state zero events", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n events 0\n}",
		"main.nsc:5:9: state s: events 0: want at least 1"},
	{"state max above bytes", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n max 2 GiB\n bytes 1 GiB\n}",
		"main.nsc:2:1: state s: max 2147483648 is above bytes 1073741824: an event that long could never be held"},
	{"state unknown unit", "header h { a: 8 }\nstate s {\n key { h.a }\n buffer h.a\n max 1 GB\n}",
		"main.nsc:5:8: unexpected token \"GB\" (expected \"}\")"},
	{"state declared twice", "header h { a: 8 }\nstate s { key { h.a } buffer h.a }\nstate s { key { h.a } buffer h.a }",
		"main.nsc:3:1: state s declared twice"},
	{"place unknown state", "header h { a: 8 }\nlpg G {\n node Q { op input parse h port out -> P }\n node P { op place s at h.a port placed }\n}",
		"main.nsc:4:14: unknown state s"},
	{"place at a condition", "header h { a: 8 }\nstate s { key { h.a } buffer h.a }\nlpg G {\n node Q { op input parse h port out -> P }\n node P { op place s at h.a == 0 port placed }\n}",
		"main.nsc:5:25: place at h.a == 0: want a value, not a condition"},
	{"place port missing", "header h { a: 8 }\nstate s { key { h.a } buffer h.a }\nlpg G {\n node Q { op input parse h port out -> P }\n node P { op place s at h.a port placed }\n}",
		"main.nsc:5:2: node P: port complete of place is not connected (declare `port complete` to end packets there)"},
}

func TestErrors(t *testing.T) {
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(map[string]string{"main.nsc": c.src})
			if err == nil {
				t.Fatalf("model loaded; want error %q", c.want)
			}
			var el lang.ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("error %v is a %T, want lang.ErrorList", err, err)
			}
			if got := el[0].Error(); got != c.want {
				t.Errorf("first error\n got: %s\nwant: %s\n(all: %v)", got, c.want, err)
			}
		})
	}
}

func TestErrorsAcrossIncludes(t *testing.T) {
	_, err := load(map[string]string{
		"main.nsc":  "include \"sub/h.nsc\"\nlpg G {\n node Q { op input parse h port out }\n}",
		"sub/h.nsc": "header h {\n a: 8\n a: 8\n}",
	})
	if err == nil || !strings.Contains(err.Error(), "sub/h.nsc:3:2: header h: field a declared twice") {
		t.Fatalf("got %v, want the error positioned in the included file", err)
	}
}

func TestSeveralErrorsReported(t *testing.T) {
	_, err := load(map[string]string{"main.nsc": "header h { a: 0 }\nheader g { b: 200 }"})
	var el lang.ErrorList
	if !errors.As(err, &el) || len(el) != 2 {
		t.Fatalf("got %v, want two errors", err)
	}
}

package p4

import (
	"fmt"
	"strings"
)

// keywords are P4_16's reserved words and the names core.p4 and the two
// architectures declare; a model name that is one gets a trailing _.
var keywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`abstract action actions apply bit bool const control default else
		entries enum error exit extern false header header_union if in inout int key list match_kind
		out package parser priority return select state string struct switch table this transition true
		tuple type typedef value_set varbit void accept reject start packet_in packet_out
		exact ternary lpm range optional selector NoAction verify
		hdr packet standard_metadata smeta mark_to_drop counter CounterType
		V1Switch XilinxPipeline standard_metadata_t NoError PacketTooShort NoMatch StackOutOfBounds
		HeaderTooShort ParserTimeout ParserInvalidArgument`) {
		keywords[w] = true
	}
}

// ident turns a model name into a P4 identifier: letters, digits and _,
// not a keyword.
func ident(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || keywords[out] {
		out += "_"
	}
	return out
}

// labelIdent turns a count or drop label into an identifier: runs of other
// characters become one _, "rx_rslt[0] parse fail" is rx_rslt_0_parse_fail.
func labelIdent(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok {
			if !under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		b.WriteRune(r)
		under = r == '_'
	}
	return ident(strings.TrimRight(b.String(), "_"))
}

// namer hands out identifiers unique within one scope.
type namer struct{ used map[string]bool }

func newNamer(reserved ...string) *namer {
	n := &namer{used: map[string]bool{}}
	for _, r := range reserved {
		n.used[r] = true
	}
	return n
}

// take returns want, or want with a number, whichever is free.
func (n *namer) take(want string) string {
	name := want
	for i := 2; n.used[name]; i++ {
		name = fmt.Sprintf("%s_%d", want, i)
	}
	n.used[name] = true
	return name
}

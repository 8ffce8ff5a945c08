package p4sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// p4c's check of header validity (frontends/p4/simplifyDefUse.cpp,
// HeaderDefinitions), written out for the programs Parse reads:
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
	prog        *Program
	st          vstate
	unreachable bool
	report      bool
	found       []string
}

// invalidHeaderAccesses lists, as p4c would warn, every access to a field
// of a header that may be invalid there.
func InvalidHeaderAccesses(prog *Program) []string {
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

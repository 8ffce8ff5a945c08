package predicate

// This file is a small reduced ordered BDD (unique table + memoised apply,
// nodes as int32 indices, no finalizers). github.com/dalzilio/rudd was judged
// and not used because:
//   - its variable count is fixed at New, while a Space allocates variables as
//     fields, headers, symbols and atoms first appear (growing would mean
//     rebuilding every Pred a caller holds);
//   - it frees nodes through finalizers that run on the runtime's finalizer
//     goroutine and decrement reference counts which the caller's goroutine
//     increments without a lock: `go run -race` on a 32-clause formula with
//     GOGC=1 reports the race (rudd hkernel.go retnode vs hudd.go
//     nodefinalizer), and a lost increment lets its collector reclaim a live
//     node, i.e. wrong answers rather than a crash;
//   - every result is a heap-allocated *int carrying a finalizer.
// Here nodes are never freed: a Space serves one compilation and is dropped
// whole, which also keeps every memoised result valid forever.

import (
	"math"
	"slices"
)

// node indexes bdd.nodes. 0 and 1 are the terminals.
type node int32

const (
	falseNode node = 0
	trueNode  node = 1
)

// terminalLevel sorts after every variable so that min(level) picks the top
// variable of two operands without special cases.
const terminalLevel = math.MaxInt32

type nodeData struct {
	level  int32 // variable; smaller levels are nearer the root
	lo, hi node  // cofactors for the variable false / true
}

type opcode int32

const (
	opAnd opcode = iota + 1
	opOr
	opNot
	opExists // a = operand, b = cube of the quantified levels
)

type cacheEntry struct {
	op      opcode
	a, b, r node
}

type bdd struct {
	nodes  []nodeData
	unique []node // open addressing, linear probing; 0 marks an empty slot (terminals are never stored)
	cache  []cacheEntry
}

func newBDD() *bdd {
	return &bdd{
		nodes:  []nodeData{{terminalLevel, 0, 0}, {terminalLevel, 1, 1}},
		unique: make([]node, 1<<10),
		cache:  make([]cacheEntry, 1<<10),
	}
}

func hash3(a, b, c uint32) uint32 {
	h := a*0x9e3779b1 ^ b*0x85ebca77 ^ c*0xc2b2ae3d
	h ^= h >> 15
	h *= 0x2c1b3c6d
	return h ^ h>>13
}

// mk returns the unique node (level, lo, hi), skipping redundant tests.
func (b *bdd) mk(level int32, lo, hi node) node {
	if lo == hi {
		return lo
	}
	mask := uint32(len(b.unique) - 1)
	i := hash3(uint32(level), uint32(lo), uint32(hi)) & mask
	for {
		n := b.unique[i]
		if n == 0 {
			break
		}
		if d := b.nodes[n]; d.level == level && d.lo == lo && d.hi == hi {
			return n
		}
		i = (i + 1) & mask
	}
	n := node(len(b.nodes))
	b.nodes = append(b.nodes, nodeData{level, lo, hi})
	b.unique[i] = n
	if 2*len(b.nodes) > len(b.unique) {
		b.grow()
	}
	return n
}

func (b *bdd) grow() {
	b.unique = make([]node, 2*len(b.unique))
	mask := uint32(len(b.unique) - 1)
	for n := 2; n < len(b.nodes); n++ {
		d := b.nodes[n]
		i := hash3(uint32(d.level), uint32(d.lo), uint32(d.hi)) & mask
		for b.unique[i] != 0 {
			i = (i + 1) & mask
		}
		b.unique[i] = node(n)
	}
	// The cache is lossy, so it is simply replaced by a bigger empty one.
	if len(b.cache) < 1<<22 {
		b.cache = make([]cacheEntry, len(b.unique)/2)
	}
}

func (b *bdd) variable(level int32) node { return b.mk(level, falseNode, trueNode) }

func (b *bdd) lookup(op opcode, x, y node) (*cacheEntry, bool) {
	e := &b.cache[hash3(uint32(op), uint32(x), uint32(y))&uint32(len(b.cache)-1)]
	return e, e.op == op && e.a == x && e.b == y
}

func (b *bdd) not(x node) node {
	switch x {
	case falseNode:
		return trueNode
	case trueNode:
		return falseNode
	}
	if e, ok := b.lookup(opNot, x, 0); ok {
		return e.r
	}
	d := b.nodes[x]
	r := b.mk(d.level, b.not(d.lo), b.not(d.hi))
	*b.entry(opNot, x, 0) = cacheEntry{opNot, x, 0, r}
	return r
}

// entry re-locates the cache slot after recursion (the cache may have been
// replaced by grow meanwhile).
func (b *bdd) entry(op opcode, x, y node) *cacheEntry {
	e, _ := b.lookup(op, x, y)
	return e
}

func (b *bdd) and(x, y node) node { return b.apply(opAnd, x, y) }
func (b *bdd) or(x, y node) node  { return b.apply(opOr, x, y) }

func (b *bdd) apply(op opcode, x, y node) node {
	switch op {
	case opAnd:
		switch {
		case x == falseNode || y == falseNode:
			return falseNode
		case x == trueNode:
			return y
		case y == trueNode || x == y:
			return x
		}
	case opOr:
		switch {
		case x == trueNode || y == trueNode:
			return trueNode
		case x == falseNode:
			return y
		case y == falseNode || x == y:
			return x
		}
	}
	if x > y { // both operators commute: one cache entry per pair
		x, y = y, x
	}
	if e, ok := b.lookup(op, x, y); ok {
		return e.r
	}
	dx, dy := b.nodes[x], b.nodes[y]
	top := min(dx.level, dy.level)
	xl, xh, yl, yh := x, x, y, y
	if dx.level == top {
		xl, xh = dx.lo, dx.hi
	}
	if dy.level == top {
		yl, yh = dy.lo, dy.hi
	}
	r := b.mk(top, b.apply(op, xl, yl), b.apply(op, xh, yh))
	*b.entry(op, x, y) = cacheEntry{op, x, y, r}
	return r
}

// cube returns the conjunction of the variables at levels, the canonical
// name of that set of levels: equal sets give the same node, different sets
// different nodes, which is what keys exists's cache entries.
func (b *bdd) cube(levels []int32) node {
	ls := slices.Clone(levels)
	slices.Sort(ls)
	c := trueNode
	for i := len(ls) - 1; i >= 0; i-- { // bottom-up
		if i+1 < len(ls) && ls[i] == ls[i+1] {
			continue
		}
		c = b.mk(ls[i], falseNode, c)
	}
	return c
}

// exists returns ∃levels. x: x with every variable at levels unconstrained.
func (b *bdd) exists(x node, levels []int32) node {
	return b.existsCube(x, b.cube(levels))
}

// existsCube is exists over the levels of cube, a conjunction of positive
// variables. Memoised on (x, cube): the cube node stands for the level set.
func (b *bdd) existsCube(x, cube node) node {
	if x <= trueNode {
		return x
	}
	d := b.nodes[x]
	for cube != trueNode && b.nodes[cube].level < d.level { // levels x cannot test
		cube = b.nodes[cube].hi
	}
	if cube == trueNode {
		return x
	}
	if e, ok := b.lookup(opExists, x, cube); ok {
		return e.r
	}
	var r node
	if b.nodes[cube].level == d.level {
		rest := b.nodes[cube].hi
		if r = b.existsCube(d.lo, rest); r != trueNode {
			r = b.or(r, b.existsCube(d.hi, rest))
		}
	} else {
		r = b.mk(d.level, b.existsCube(d.lo, cube), b.existsCube(d.hi, cube))
	}
	*b.entry(opExists, x, cube) = cacheEntry{opExists, x, cube, r}
	return r
}

// implies reports x ⇒ y.
func (b *bdd) implies(x, y node) bool { return b.and(x, b.not(y)) == falseNode }

// support returns the levels x depends on, ascending.
func (b *bdd) support(x node) []int32 {
	seen := map[node]bool{}
	levels := map[int32]bool{}
	var walk func(node)
	walk = func(n node) {
		if n <= trueNode || seen[n] {
			return
		}
		seen[n] = true
		d := b.nodes[n]
		levels[d.level] = true
		walk(d.lo)
		walk(d.hi)
	}
	walk(x)
	out := make([]int32, 0, len(levels))
	for l := range levels {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// assignment is one literal of a cube: variable level and its value.
type assignment struct {
	level int32
	value bool
}

// shortestCube returns a path from x to true with the fewest tested
// variables (the most general cube), preferring the false branch on ties so
// the result is deterministic. x must not be false.
func (b *bdd) shortestCube(x node) []assignment {
	const inf = math.MaxInt32
	dist := map[node]int32{falseNode: inf, trueNode: 0}
	var d func(node) int32
	d = func(n node) int32 {
		if v, ok := dist[n]; ok {
			return v
		}
		nd := b.nodes[n]
		v := min(d(nd.lo), d(nd.hi))
		if v != inf {
			v++
		}
		dist[n] = v
		return v
	}
	var cube []assignment
	for n := x; n != trueNode; {
		nd := b.nodes[n]
		if d(nd.lo) <= d(nd.hi) {
			cube = append(cube, assignment{nd.level, false})
			n = nd.lo
		} else {
			cube = append(cube, assignment{nd.level, true})
			n = nd.hi
		}
	}
	return cube
}

// paths counts the paths from x to true, saturating at limit.
func (b *bdd) paths(x node, limit int) int {
	memo := map[node]int{falseNode: 0, trueNode: 1}
	var count func(node) int
	count = func(n node) int {
		if v, ok := memo[n]; ok {
			return v
		}
		d := b.nodes[n]
		v := min(count(d.lo)+count(d.hi), limit)
		memo[n] = v
		return v
	}
	return count(x)
}

// density returns the fraction of all assignments that satisfy each node
// reachable from x; unlike a model count it cannot overflow with wide fields.
func (b *bdd) density(x node) map[node]float64 {
	dens := map[node]float64{falseNode: 0, trueNode: 1}
	var d func(node) float64
	d = func(n node) float64 {
		if v, ok := dens[n]; ok {
			return v
		}
		nd := b.nodes[n]
		v := (d(nd.lo) + d(nd.hi)) / 2
		dens[n] = v
		return v
	}
	d(x)
	return dens
}

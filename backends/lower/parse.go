package lower

import (
	"slices"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A parse, lowered: packet.Packet.ParseFrame's loop unrolled from its
// start header, as
//
//	ParseBegin; per header: ParseHeader, per next-header edge
//	(ParseNext, the header it leads to or ParseDone, EndParseNext),
//	ParseDone, EndParseHeader; ParseEnd
//
// The first edge that matches is taken (the branches end the parse,
// so the edges after it are its else); a header met again, or metadata
// (always valid), ends the parse; a header that is not there ends it
// failed (ParseHeader's to print).

// MaxParseSites bounds the sites UnrollParse counts: past it a parse
// graph unrolls too far for any printer.
const MaxParseSites = 4096

// ParseGraph is the parse graph unrolled from Start.
type ParseGraph struct {
	Start int
	// Input: the graph's input parses, once per frame, at its entry.
	Input bool
	// Sites are the extractions the unrolled parse prints, counted up to
	// MaxParseSites and one past it.
	Sites int
	// Narrow: every next-header test reads at most 64 bits.
	Narrow bool
}

// ParseSyntax prints an unrolled parse's parts.
type ParseSyntax interface {
	// ParseBegin forgets the wire headers and puts the cursor at 0; it
	// returns the parse's condition and false where the printer parses
	// another way (a runtime call), which it has printed then.
	ParseBegin(pg *ParseGraph) (cond string, unrolled bool)
	// ParseHeader extracts a header at the cursor and ends the parse,
	// failed, where it is not there.
	ParseHeader(x *Extract)
	// ParseNext opens the branch taken when h's edge e matches, the
	// headers in seen valid (extracted on the way); EndParseNext closes
	// it.
	ParseNext(h int, e *packet.ParseEdge, seen []int)
	EndParseNext()
	// ParseDone ends the parse, succeeded.
	ParseDone()
	EndParseHeader(h int)
	// ParseEnd closes the parse.
	ParseEnd(pg *ParseGraph)
}

// UnrollParse counts the sites of the parse graph from start.
func UnrollParse(s *packet.Schema, start int) *ParseGraph {
	pg := &ParseGraph{Start: start, Narrow: true}
	pg.count(s, start, nil, MaxParseSites)
	return pg
}

// count adds the sites from header h, the headers in seen on the way; it
// reports false once past limit.
func (pg *ParseGraph) count(s *packet.Schema, h int, seen []int, limit int) bool {
	pg.Sites++
	seen = append(seen[:len(seen):len(seen)], h)
	for _, e := range s.Next {
		if e.From != h {
			continue
		}
		if s.Headers[h].Fields[e.Field].Width > 64 || e.Mask.Hi != 0 {
			pg.Narrow = false
		}
		if ends(s, e.To, seen) {
			continue
		}
		if pg.Sites > limit || !pg.count(s, e.To, seen, limit) {
			return false
		}
	}
	return pg.Sites <= limit
}

// ends reports whether reaching header h ends a parse that extracted seen.
func ends(s *packet.Schema, h int, seen []int) bool {
	return s.Headers[h].Metadata || slices.Contains(seen, h)
}

// Parse prints a parse of pg through d and returns its condition.
func Parse(d ParseSyntax, s *packet.Schema, pg *ParseGraph) string {
	cond, unrolled := d.ParseBegin(pg)
	if unrolled {
		unroll(d, s, pg)
	}
	return cond
}

// unroll prints the parse of pg after its begin, and its end.
func unroll(d ParseSyntax, s *packet.Schema, pg *ParseGraph) {
	parseFrom(d, s, pg.Start, nil)
	d.ParseEnd(pg)
}

// parseFrom prints the parse from header h, the headers in seen on the
// way.
func parseFrom(d ParseSyntax, s *packet.Schema, h int, seen []int) {
	d.ParseHeader(LowerExtract(s, h))
	seen = append(seen[:len(seen):len(seen)], h)
	for i := range s.Next {
		e := &s.Next[i]
		if e.From != h {
			continue
		}
		d.ParseNext(h, e, seen)
		if ends(s, e.To, seen) {
			d.ParseDone()
		} else {
			parseFrom(d, s, e.To, seen)
		}
		d.EndParseNext()
	}
	d.ParseDone()
	d.EndParseHeader(h)
}

// parse prints parse node n, the graph's input (which drops a frame the
// parse fails on) or a parse operation (which branches on it).
func (w *Walker) parse(n *dataflow.Node) {
	s := w.P.Graph.Schema
	pg := UnrollParse(s, n.Op.Header)
	pg.Input = n.Op.Kind == packet.OpInput
	cond, unrolled := w.D.ParseBegin(pg)
	w.forget() // the parse finds the headers anew
	if unrolled {
		unroll(w.D, s, pg)
	}
	if pg.Input {
		w.D.DropUnless(cond)
		return
	}
	w.Branch(n, cond)
}

package lower

import (
	"github.com/dragonet-go/nsc/backends/flow"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
)

// A set, lowered: its assignments with the width each value is computed
// in and, where it updates checksums, the windows (packet.Packet.window)
// each checksum sums around a field before and after the write, as far as
// the layout and the validity analysis decide them at generation time.
//
// A summed set (flow.CanSumUpdates) prints as
//
//	Delta per checksum; per assignment Eval, Old, Store, Accumulate; Apply per checksum
//
// and any other set as one Assign per assignment, which patches its
// checksums in turn (SetSyntax).

// WindowKind says where a checksum's window around a field lies.
type WindowKind uint8

const (
	// WindowStatic: from the field's header's start (Lo, Hi), fixed by
	// the layout: the field's header is the checksummed one, or holds
	// pseudo-header fields and cannot lie behind it.
	WindowStatic WindowKind = iota + 1
	// WindowDynamic: from the checksummed header's start, the field's
	// header lying behind it; the parity of their distance picks Lo, Hi
	// (even) or OddLo, OddHi at run time. Where the field's header does
	// not lie behind, the pseudo-header's static window applies if
	// Pseudo, else none.
	WindowDynamic
)

// Window is checksum U's window around an assigned field. The ranges are
// relative to the field's header; a variant wider than flow.MaxWindow,
// which the interpreter never patches, has Fits false.
type Window struct {
	U             int
	Kind          WindowKind
	Pseudo        bool
	Lo, Hi        int
	OddLo, OddHi  int
	Fits, OddFits bool
}

// SetAssign is one assignment of a set.
type SetAssign struct {
	packet.Assign
	Field packet.FieldSpec
	// Meta: the field is metadata, which no checksum covers.
	Meta bool
	// Wide: the value is computed in 128 bits; else its low 64 bits
	// (flow.LowPreserving) are all the field keeps.
	Wide bool
	// Windows: the windows of the checksums the set updates that may
	// cover the field, in the set's order (at most flow.MaxWindows where
	// the set is not summed, as the interpreter patches).
	Windows []Window
}

// Set is a lowered set.
type Set struct {
	// Summed: the checksum patches are summed per checksum and applied
	// once at the end (flow.CanSumUpdates); Checksums are those summed.
	Summed    bool
	Checksums []int
	Assigns   []SetAssign
}

// SetSyntax prints a lowered set's parts. Old's and Accumulate's windows
// are the assignment's; what Old leaves for Accumulate (sums, variables)
// the printer keeps.
type SetSyntax interface {
	// Delta declares a sum of deltas for checksum u and returns its name.
	Delta(u int) string
	// Eval evaluates a's value into a variable and returns its name.
	Eval(a *SetAssign) string
	// Old sums the old words of a's windows; Store writes v into a's
	// field; Accumulate adds each window's delta to its checksum's sum
	// (deltas: by checksum header).
	Old(a *SetAssign)
	Store(a *SetAssign, v string)
	Accumulate(a *SetAssign, v string, deltas map[int]string)
	// Apply patches checksum u with the sum in d.
	Apply(u int, d string)
	// Assign prints an assignment of a set that is not summed: plain, or
	// patching the checksums in update in turn.
	Assign(a *SetAssign, update []int)
}

// LowerSet lowers set node n. It refuses (ok false) an assignment to a
// variable-length field.
func (w *Walker) LowerSet(n *dataflow.Node) (set Set, ok bool) {
	s, o := w.P.Graph.Schema, n.Op
	set.Summed = flow.CanSumUpdates(s, o)
	us := flow.Checksummed(s, o)
	if set.Summed {
		set.Checksums = us
	}
	for _, a := range o.Assign {
		sa, ok := w.assignOf(n, a)
		if !ok {
			return set, false
		}
		if !sa.Meta {
			for _, u := range us {
				if win, ok := FieldWindow(s, w.Valid, n, u, a.Dst); ok {
					sa.Windows = append(sa.Windows, win)
				}
			}
			if !set.Summed && len(sa.Windows) > flow.MaxWindows {
				sa.Windows = sa.Windows[:flow.MaxWindows]
			}
		}
		set.Assigns = append(set.Assigns, *sa)
	}
	return set, true
}

// assignOf lowers assignment a of node n; it refuses one to a
// variable-length field.
func (w *Walker) assignOf(n *dataflow.Node, a packet.Assign) (*SetAssign, bool) {
	h := w.P.Graph.Schema.Headers[a.Dst.Header]
	fs := h.Fields[a.Dst.Field]
	if fs.Variable() {
		w.Refuse(n, "assignment to %s.%s, a variable-length field", h.Name, fs.Name)
		return nil, false
	}
	return &SetAssign{Assign: a, Field: fs, Meta: h.Metadata,
		Wide: fs.Width > 64 || (flow.IsWide(a.Src) && !flow.LowPreserving(a.Src))}, true
}

// FieldWindow classifies checksum u's window around wire field f where
// node n runs (v: the validity analysis); false when u's checksum never
// covers f there.
func FieldWindow(s *packet.Schema, v *flow.Validity, n *dataflow.Node, u int, f packet.FieldRef) (Window, bool) {
	spec := s.Headers[u]
	fs := s.Headers[f.Header].Fields[f.Field]
	flo, fhi := fs.Offset/8, (fs.Offset+fs.Width+7)/8
	w := Window{U: u, OddLo: (flo+1)/2*2 - 1, OddHi: (fhi+2)/2*2 - 1}
	w.Lo, w.Hi = WordWindow(fs)
	w.Fits, w.OddFits = w.Hi-w.Lo <= flow.MaxWindow, w.OddHi-w.OddLo <= flow.MaxWindow
	pseudo := spec.ChecksumKind == packet.ChecksumL4 && s.PseudoHeaderField(f)
	switch {
	case spec.Checksum < 0, f.Header == u && f.Field == spec.Checksum:
		return w, false
	case f.Header == u:
		w.Kind = WindowStatic
		return w, w.Fits
	case spec.ChecksumKind == packet.ChecksumHeader, !v.May(n, u):
		return w, false
	case !v.Behind(n, f.Header, u):
		w.Kind = WindowStatic
		return w, pseudo && w.Fits
	}
	w.Kind, w.Pseudo = WindowDynamic, pseudo
	return w, w.Fits || w.OddFits
}

// WordWindow is the byte range [lo, hi) of the 16-bit words around field
// fs, counted from its header's start.
func WordWindow(fs packet.FieldSpec) (lo, hi int) {
	return fs.Offset / 8 / 2 * 2, ((fs.Offset+fs.Width+7)/8 + 1) / 2 * 2
}

// set prints set node n.
func (w *Walker) set(n *dataflow.Node) {
	set, ok := w.LowerSet(n)
	if !ok {
		return
	}
	d := w.D
	if !set.Summed {
		for i := range set.Assigns {
			d.Assign(&set.Assigns[i], n.Op.Update)
		}
		return
	}
	deltas := map[int]string{}
	for _, u := range set.Checksums {
		deltas[u] = d.Delta(u)
	}
	for i := range set.Assigns {
		a := &set.Assigns[i]
		if a.Meta {
			d.Assign(a, nil)
			continue
		}
		v := d.Eval(a)
		d.Old(a)
		d.Store(a, v)
		d.Accumulate(a, v, deltas)
	}
	for _, u := range set.Checksums {
		d.Apply(u, deltas[u])
	}
}

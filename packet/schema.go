package packet

import "slices"

// Schema is everything a model declares about packets: header layouts, the
// parse graph, actions and tables. Graph operations refer into it by index.
type Schema struct {
	Headers []*HeaderSpec
	// MetaFields is the number of metadata field slots (Packet.Meta).
	MetaFields int
	Next       []ParseEdge
	Actions    []*Action
	Tables     []*TableDef
	States     []*StateDef
	Registers  []*RegisterDef

	ip     ipHeaders     // resolved by Finish
	follow map[int][]int // header -> headers the parse graph lets follow it, transitively; by Finish
	start  []HeaderState // a packet's header state before parsing: metadata valid; by Finish
	loose  map[int]bool  // headers an extract or push may place where the parse graph does not
}

// Loose records that an operation (an extract) may place header h where
// the parse graph does not lead to it, such as inside a UDP payload: every
// checksum over a payload may then cover it.
func (s *Schema) Loose(h int) {
	if s.loose == nil {
		s.loose = map[int]bool{}
	}
	s.loose[h] = true
}

// Follows records that an operation (a push after x) places header h
// right after x: h, and what the parse graph lets follow h, may then be
// wherever what follows x may be. Call it after Finish.
func (s *Schema) Follows(x, h int) {
	add := append([]int{h}, s.follow[h]...)
	for _, c := range s.Headers {
		if c.ID == x || slices.Contains(s.follow[c.ID], x) {
			for _, a := range add {
				if a != c.ID && !slices.Contains(s.follow[c.ID], a) {
					s.follow[c.ID] = append(s.follow[c.ID], a)
				}
			}
		}
	}
}

// MayFollow reports whether header h may lie after header c in a frame:
// the parse graph leads from c to it, a push put it there, or an extract
// may place it anywhere.
func (s *Schema) MayFollow(c, h int) bool { return slices.Contains(s.follow[c], h) || s.loose[h] }

// initial is the header state of a fresh packet.
func (s *Schema) initial() []HeaderState {
	if len(s.start) != len(s.Headers) { // Finish not called
		s.start = make([]HeaderState, len(s.Headers))
		for _, h := range s.Headers {
			s.start[h.ID].Valid = h.Metadata
		}
	}
	return s.start
}

// TableDef is a table as a model declares it: the match spec, the
// expression that computes each key, the schema action behind each of the
// spec's actions, and the default action with its parameters.
type TableDef struct {
	Spec    *TableSpec
	Keys    []*Expr
	Actions []int
	// Default indexes Spec.Actions.
	Default       int
	DefaultParams []Value
}

// ipHeaders locates the fields the L4 pseudo-header is made of. Headers
// named ipv4 and ipv6 with these field names are the convention the header
// library follows (docs/language.md).
type ipHeaders struct {
	v4, v6                          int // header index or -1
	v4Src, v4Dst, v4Proto, v4Len    int
	v6Src, v6Dst, v6Next, v6Payload int
}

// IsIP reports whether header h is the ipv4 or ipv6 header a pseudo-header
// and an L4 checksum's end are taken from.
func (s *Schema) IsIP(h int) bool { return h >= 0 && (h == s.ip.v4 || h == s.ip.v6) }

// Finish resolves what operations look up by convention. Call it once after
// the schema is complete.
func (s *Schema) Finish() {
	ip := ipHeaders{v4: -1, v6: -1}
	field := func(h *HeaderSpec, name string) int {
		i, _ := h.Field(name)
		return i
	}
	if h, ok := s.Header("ipv4"); ok {
		ip.v4 = h.ID
		ip.v4Src, ip.v4Dst, ip.v4Proto, ip.v4Len = field(h, "src"), field(h, "dst"), field(h, "proto"), field(h, "total_len")
		if ip.v4Src < 0 || ip.v4Dst < 0 || ip.v4Proto < 0 || ip.v4Len < 0 {
			ip.v4 = -1
		}
	}
	if h, ok := s.Header("ipv6"); ok {
		ip.v6 = h.ID
		ip.v6Src, ip.v6Dst, ip.v6Next, ip.v6Payload = field(h, "src"), field(h, "dst"), field(h, "next_hdr"), field(h, "payload_len")
		if ip.v6Src < 0 || ip.v6Dst < 0 || ip.v6Next < 0 || ip.v6Payload < 0 {
			ip.v6 = -1
		}
	}
	s.ip = ip
	s.start = nil
	s.initial()
	s.follow = map[int][]int{}
	for _, h := range s.Headers {
		seen := map[int]bool{}
		todo := []int{h.ID}
		for len(todo) > 0 {
			x := todo[0]
			todo = todo[1:]
			for _, e := range s.Next {
				if e.From == x && !seen[e.To] {
					seen[e.To] = true
					todo = append(todo, e.To)
					s.follow[h.ID] = append(s.follow[h.ID], e.To)
				}
			}
		}
	}
}

// ChecksumCovers reports whether header c's checksum may cover field f: a
// field of c itself (not the checksum), of a header the parse graph lets
// follow c or an operation may place anywhere (Loose) (message and L4
// checksums), or of the IP pseudo-header (L4).
func (s *Schema) ChecksumCovers(c int, f FieldRef) bool {
	ch, h := s.Headers[c], s.Headers[f.Header]
	switch {
	case ch.Checksum < 0 || h.Metadata:
		return false
	case f.Header == c:
		return f.Field != ch.Checksum
	case ch.ChecksumKind == ChecksumHeader:
		return false
	case slices.Contains(s.follow[c], f.Header) || s.loose[f.Header]:
		return true
	}
	ip := &s.ip
	if ch.ChecksumKind != ChecksumL4 {
		return false
	}
	return (f.Header == ip.v4 && (f.Field == ip.v4Src || f.Field == ip.v4Dst || f.Field == ip.v4Proto || f.Field == ip.v4Len)) ||
		(f.Header == ip.v6 && (f.Field == ip.v6Src || f.Field == ip.v6Dst || f.Field == ip.v6Next || f.Field == ip.v6Payload))
}

// ParseEdge says that header To follows header From when From's field
// Field, masked with Mask, equals Value.
type ParseEdge struct {
	From, Field int
	Value, Mask Value
	To          int
}

// Action is a named list of assignments, run by a table hit (or miss, for the
// default action). Param widths come from Params.
type Action struct {
	Name   string
	Params []Param
	Body   []Assign
}

// Assign writes Src into Dst, truncated to Dst's width.
type Assign struct {
	Dst FieldRef
	Src *Expr
}

// Header returns the header spec by name.
func (s *Schema) Header(name string) (*HeaderSpec, bool) {
	for _, h := range s.Headers {
		if h.Name == name {
			return h, true
		}
	}
	return nil, false
}

// Table returns the index of the named table.
func (s *Schema) Table(name string) (int, bool) {
	for i, t := range s.Tables {
		if t.Spec.Name == name {
			return i, true
		}
	}
	return -1, false
}

// Action returns the index of the named action.
func (s *Schema) Action(name string) (int, bool) {
	for i, a := range s.Actions {
		if a.Name == name {
			return i, true
		}
	}
	return -1, false
}

// FieldSpec returns the spec of a field reference.
func (s *Schema) FieldSpec(f FieldRef) *FieldSpec { return &s.Headers[f.Header].Fields[f.Field] }

// FieldName is "header.field".
func (s *Schema) FieldName(f FieldRef) string {
	h := s.Headers[f.Header]
	return h.Name + "." + h.Fields[f.Field].Name
}

// TableSpec returns the spec of the named table.
func (s *Schema) TableSpec(name string) (*TableSpec, bool) {
	if i, ok := s.Table(name); ok {
		return s.Tables[i].Spec, true
	}
	return nil, false
}

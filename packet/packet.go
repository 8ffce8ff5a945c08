package packet

// Headroom is the room kept in front of a frame so that pushing headers does
// not move the payload.
const Headroom = 128

// HeaderState is where a header instance sits in the frame.
type HeaderState struct {
	Off, Len int
	Valid    bool
}

// Packet is one frame being processed: its bytes, the headers found in it,
// the metadata fields, and a parse cursor. It is reused across frames (Reset)
// so the packet path does not allocate.
type Packet struct {
	Schema *Schema
	// Data is the frame; it aliases store, which has Headroom in front.
	Data   []byte
	store  []byte
	Hdr    []HeaderState
	Meta   []Value
	Cursor int
}

// NewPacket returns an empty packet for schema s.
func NewPacket(s *Schema) *Packet {
	return &Packet{Schema: s, Hdr: make([]HeaderState, len(s.Headers)), Meta: make([]Value, s.MetaFields)}
}

// Reset loads frame (copied) and clears all header and metadata state.
func (p *Packet) Reset(frame []byte) {
	need := Headroom + len(frame) + Headroom
	if cap(p.store) < need {
		p.store = make([]byte, need)
	}
	p.store = p.store[:cap(p.store)]
	p.Data = p.store[Headroom : Headroom+len(frame)]
	copy(p.Data, frame)
	copy(p.Hdr, p.Schema.initial())
	clear(p.Meta)
	p.Cursor = 0
}

// Load makes the frame buf[off:off+n] the packet, in place: no copy, so
// the caller keeps owning the buffer and finds the result in Data, which
// aliases buf. Bytes before off are headroom for pushes, bytes after
// off+n tailroom. Header and metadata state are cleared.
func (p *Packet) Load(buf []byte, off, n int) {
	p.store = buf[:cap(buf)]
	p.Data = p.store[off : off+n]
	copy(p.Hdr, p.Schema.initial())
	clear(p.Meta)
	p.Cursor = 0
}

// Clone copies q into p (for spawn edges), reusing p's buffers.
func (p *Packet) Clone(q *Packet) {
	p.Schema = q.Schema
	p.Reset(q.Data)
	copy(p.Hdr, q.Hdr)
	copy(p.Meta, q.Meta)
	p.Cursor = q.Cursor
}

// Valid reports whether header h was extracted (metadata is always valid).
func (p *Packet) Valid(h int) bool { return h >= 0 && h < len(p.Hdr) && p.Hdr[h].Valid }

// Bytes returns the bytes of a valid wire header.
func (p *Packet) Bytes(h int) ([]byte, bool) {
	if !p.Valid(h) || p.Schema.Headers[h].Metadata {
		return nil, false
	}
	st := p.Hdr[h]
	if st.Off < 0 || st.Off+st.Len > len(p.Data) {
		return nil, false
	}
	return p.Data[st.Off : st.Off+st.Len], true
}

// Get reads a field. Reading a field of an invalid header fails.
func (p *Packet) Get(f FieldRef) (Value, bool) {
	h := p.Schema.Headers[f.Header]
	if h.Metadata {
		return p.Meta[h.MetaBase+f.Field], true
	}
	b, ok := p.Bytes(f.Header)
	if !ok {
		return Value{}, false
	}
	fs := &h.Fields[f.Field]
	if fs.Variable() {
		return Value{}, false
	}
	return GetBits(b, fs.Offset, fs.Width)
}

// Set writes the low bits of v into a field.
func (p *Packet) Set(f FieldRef, v Value) bool {
	h := p.Schema.Headers[f.Header]
	fs := &h.Fields[f.Field]
	if h.Metadata {
		p.Meta[h.MetaBase+f.Field] = v.And(Mask(fs.Width))
		return true
	}
	b, ok := p.Bytes(f.Header)
	if !ok || fs.Variable() {
		return false
	}
	return SetBits(b, fs.Offset, fs.Width, v)
}

// Extract parses header h at the cursor and advances it. It fails, leaving h
// invalid, when the frame is too short or the header's length field is
// inconsistent.
func (p *Packet) Extract(h int) bool {
	spec := p.Schema.Headers[h]
	if spec.Metadata {
		return true
	}
	n, ok := p.headerLen(spec, p.Cursor)
	if !ok {
		p.Hdr[h] = HeaderState{}
		return false
	}
	p.Hdr[h] = HeaderState{Off: p.Cursor, Len: n, Valid: true}
	p.Cursor += n
	return true
}

// headerLen is the length of header spec placed at off, reading its
// variable-length field's size from the packet.
func (p *Packet) headerLen(spec *HeaderSpec, off int) (int, bool) {
	n := spec.FixedBytes()
	if off < 0 || off+n > len(p.Data) {
		return 0, false
	}
	last := &spec.Fields[len(spec.Fields)-1]
	if !last.Variable() {
		return n, true
	}
	// Evaluate the length with the header provisionally in place.
	saved := p.Hdr[spec.ID]
	p.Hdr[spec.ID] = HeaderState{Off: off, Len: n, Valid: true}
	extra, ok := last.Length.Eval(p, nil)
	p.Hdr[spec.ID] = saved
	// The length is computed modulo the expression width; a "negative"
	// result (ihl < 5) shows up as a huge value and is refused here.
	if !ok || extra.Hi != 0 || extra.Lo > uint64(len(p.Data)) || off+n+int(extra.Lo) > len(p.Data) {
		return 0, false
	}
	return n + int(extra.Lo), true
}

// ParseFrame forgets the wire headers found so far and runs the parse graph
// from header start at the beginning of the frame, so parsing again gives
// the same headers (the parse operation's meaning).
func (p *Packet) ParseFrame(start int) bool {
	for i := range p.Hdr {
		if !p.Schema.Headers[i].Metadata {
			p.Hdr[i] = HeaderState{}
		}
	}
	p.Cursor = 0
	return p.Parse(start)
}

// Parse runs the parse graph from header start at the cursor. It returns
// false when a header on the way is truncated or malformed; headers parsed
// before that stay valid.
func (p *Packet) Parse(start int) bool {
	h := start
	for steps := 0; steps <= len(p.Schema.Headers); steps++ {
		if !p.Extract(h) {
			return false
		}
		next := -1
		for i := range p.Schema.Next {
			e := &p.Schema.Next[i]
			if e.From != h {
				continue
			}
			v, ok := p.Get(FieldRef{h, e.Field})
			if ok && v.And(e.Mask) == e.Value.And(e.Mask) {
				next = e.To
				break
			}
		}
		if next < 0 || p.Valid(next) { // end of the graph, or a loop
			return true
		}
		h = next
	}
	return true
}

// Push inserts header h, zeroed, with extra bytes for its variable-length
// field, at byte offset off, moving everything from off on back. Headers
// that start at or after off move with it.
func (p *Packet) Push(h, off, extra int) bool {
	spec := p.Schema.Headers[h]
	if spec.Metadata {
		return true
	}
	if p.Valid(h) || off < 0 || off > len(p.Data) {
		return false
	}
	n := spec.FixedBytes() + extra
	start := cap(p.store) - cap(p.Data) // index of Data[0] in store
	end := start + len(p.Data)
	if off == 0 && start >= n { // grow into the headroom
		p.Data = p.store[start-n : end]
	} else if end+n <= len(p.store) {
		p.Data = p.store[start : end+n]
		copy(p.Data[off+n:], p.Data[off:end-start])
	} else {
		return false
	}
	shift := n
	if off == 0 && start >= n {
		// Data moved its origin back by n: every existing offset is n later.
		for i := range p.Hdr {
			if p.Hdr[i].Valid {
				p.Hdr[i].Off += shift
			}
		}
		p.Cursor += shift
	} else {
		for i := range p.Hdr {
			if p.Hdr[i].Valid && p.Hdr[i].Off >= off && !p.Schema.Headers[i].Metadata {
				p.Hdr[i].Off += shift
			}
		}
		if p.Cursor >= off {
			p.Cursor += shift
		}
	}
	clear(p.Data[off : off+n])
	p.Hdr[h] = HeaderState{Off: off, Len: n, Valid: true}
	return true
}

// Pop removes header h's bytes from the frame and marks it invalid.
func (p *Packet) Pop(h int) bool {
	b, ok := p.Bytes(h)
	if !ok {
		return false
	}
	off, n := p.Hdr[h].Off, len(b)
	if off < len(p.Data)-off-n {
		// Fewer bytes in front: move them forward over the header (the
		// payload stays put), as a NIC adjusts the packet head.
		copy(p.Data[n:n+off], p.Data[:off])
		p.Data = p.Data[n:]
	} else {
		copy(p.Data[off:], p.Data[off+n:])
		p.Data = p.Data[:len(p.Data)-n]
	}
	p.Hdr[h] = HeaderState{}
	for i := range p.Hdr {
		if p.Hdr[i].Valid && !p.Schema.Headers[i].Metadata && p.Hdr[i].Off > off {
			p.Hdr[i].Off -= n
		}
	}
	if p.Cursor > off {
		p.Cursor = max(off, p.Cursor-n)
	}
	return true
}

// Cut removes the bytes from the cursor to the end of the frame (a
// payload, an ICRC, padding): what `cut` does to turn a request into its
// reply. A header reaching past the cursor is no longer in the packet.
func (p *Packet) Cut() {
	p.Cursor = min(max(p.Cursor, 0), len(p.Data))
	p.Data = p.Data[:p.Cursor]
	for i := range p.Hdr {
		if p.Hdr[i].Valid && !p.Schema.Headers[i].Metadata && p.Hdr[i].Off+p.Hdr[i].Len > p.Cursor {
			p.Hdr[i] = HeaderState{}
		}
	}
}

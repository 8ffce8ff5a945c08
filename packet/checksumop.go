package packet

// This file gives the checksum operations their meaning on a Packet: which
// bytes a header's checksum covers, full verify/compute, and the RFC 1624
// incremental updates that set and pop perform.

// region returns the bytes header h's checksum covers and the pseudo-header
// sum to add. ok is false when the packet's lengths are inconsistent.
func (p *Packet) region(h int) (b []byte, pseudo uint32, ok bool) {
	spec := p.Schema.Headers[h]
	if !p.Valid(h) || spec.Metadata || spec.Checksum < 0 {
		return nil, 0, false
	}
	start := p.Hdr[h].Off
	if spec.ChecksumKind == ChecksumHeader {
		hb, ok := p.Bytes(h)
		return hb, 0, ok
	}
	end := len(p.Data)
	ip := &p.Schema.ip
	src, dst := FieldRef{-1, 0}, FieldRef{-1, 0}
	var proto Value
	switch {
	case ip.v4 >= 0 && p.Valid(ip.v4) && p.Hdr[ip.v4].Off < start:
		l, _ := p.Get(FieldRef{ip.v4, ip.v4Len})
		proto, _ = p.Get(FieldRef{ip.v4, ip.v4Proto})
		end = p.Hdr[ip.v4].Off + int(l.Lo)
		src, dst = FieldRef{ip.v4, ip.v4Src}, FieldRef{ip.v4, ip.v4Dst}
	case ip.v6 >= 0 && p.Valid(ip.v6) && p.Hdr[ip.v6].Off < start:
		l, _ := p.Get(FieldRef{ip.v6, ip.v6Payload})
		proto, _ = p.Get(FieldRef{ip.v6, ip.v6Next})
		end = p.Hdr[ip.v6].Off + p.Hdr[ip.v6].Len + int(l.Lo)
		src, dst = FieldRef{ip.v6, ip.v6Src}, FieldRef{ip.v6, ip.v6Dst}
	}
	if end > len(p.Data) || end < start+p.Hdr[h].Len {
		return nil, 0, false
	}
	if src.Header >= 0 && spec.ChecksumKind == ChecksumL4 {
		sb, ok1 := p.fieldBytes(src)
		db, ok2 := p.fieldBytes(dst)
		if !ok1 || !ok2 {
			return nil, 0, false
		}
		if src.Header == ip.v4 {
			pseudo = PseudoHeaderSumIPv4(sb, db, uint8(proto.Lo), uint16(end-start))
		} else {
			pseudo = PseudoHeaderSumIPv6(sb, db, uint8(proto.Lo), uint32(end-start))
		}
	}
	return p.Data[start:end], pseudo, true
}

// fieldBytes returns the bytes of a byte-aligned wire field.
func (p *Packet) fieldBytes(f FieldRef) ([]byte, bool) {
	b, ok := p.Bytes(f.Header)
	fs := p.Schema.FieldSpec(f)
	if !ok || fs.Offset%8 != 0 || fs.Width%8 != 0 || fs.Offset/8+fs.Width/8 > len(b) {
		return nil, false
	}
	return b[fs.Offset/8 : fs.Offset/8+fs.Width/8], true
}

// VerifyChecksum checks header h's checksum. wellFormed is false when the
// covered bytes cannot be determined (truncated packet, bad lengths).
func (p *Packet) VerifyChecksum(h int) (valid, wellFormed bool) {
	b, pseudo, ok := p.region(h)
	if !ok {
		return false, false
	}
	spec := p.Schema.Headers[h]
	if spec.ChecksumOptional && p.Schema.ip.v4 >= 0 && p.Valid(p.Schema.ip.v4) {
		if c, _ := p.Get(FieldRef{h, spec.Checksum}); c.IsZero() {
			return true, true // sender did not compute one (RFC 768)
		}
	}
	return Fold(Sum(b, pseudo)) == 0, true
}

// ComputeChecksum writes header h's checksum.
func (p *Packet) ComputeChecksum(h int) bool {
	spec := p.Schema.Headers[h]
	if !p.Valid(h) || spec.Checksum < 0 {
		return false
	}
	field := FieldRef{h, spec.Checksum}
	if !p.Set(field, Value{}) {
		return false
	}
	b, pseudo, ok := p.region(h)
	if !ok {
		return false
	}
	c := Fold(Sum(b, pseudo))
	if c == 0 && spec.ChecksumOptional {
		c = 0xffff // zero would mean "no checksum"
	}
	return p.Set(field, V(uint64(c)))
}

// window returns the 16-bit aligned byte range of field f as header u's
// checksum sees it, or ok=false when u's checksum does not cover f.
func (p *Packet) window(u int, f FieldRef) (lo, hi int, ok bool) {
	spec := p.Schema.Headers[u]
	fh := p.Schema.Headers[f.Header]
	if !p.Valid(u) || spec.Checksum < 0 || fh.Metadata || !p.Valid(f.Header) || (f.Header == u && f.Field == spec.Checksum) {
		return 0, 0, false
	}
	var rs int
	switch {
	case f.Header == u:
		rs = p.Hdr[u].Off
	case spec.ChecksumKind != ChecksumHeader && p.Hdr[f.Header].Off > p.Hdr[u].Off:
		rs = p.Hdr[u].Off
	case spec.ChecksumKind == ChecksumL4 && p.Schema.PseudoHeaderField(f):
		// Pseudo-header fields sit at the same 16-bit word positions in the
		// IP header (IPv4's proto is a low byte in both).
		rs = p.Hdr[f.Header].Off
	default:
		return 0, 0, false
	}
	fs := p.Schema.FieldSpec(f)
	bit := p.Hdr[f.Header].Off*8 + fs.Offset
	lo, hi = bit/8, (bit+fs.Width+7)/8
	lo = rs + (lo-rs)/2*2
	hi = rs + (hi-rs+1)/2*2
	if hi > len(p.Data) {
		return 0, 0, false
	}
	return lo, hi, true
}

// SetUpdating sets field f to v and patches the checksums of the headers in
// update that cover it (RFC 1624), as `set … update` does.
func (p *Packet) SetUpdating(f FieldRef, v Value, update []int) bool {
	return p.setUpdating(f, v, update)
}

// A set patches at most MaxWindows checksums per field, over windows of at
// most MaxWindow bytes; generated code mirrors these limits.
const (
	MaxWindows = 4
	MaxWindow  = 20
)

// setUpdating sets f and patches the checksums in update that cover it.
func (p *Packet) setUpdating(f FieldRef, v Value, update []int) bool {
	type win struct{ u, lo, hi int }
	var old [MaxWindows][MaxWindow]byte
	var wins [MaxWindows]win
	n := 0
	for _, u := range update {
		lo, hi, ok := p.window(u, f)
		if !ok || n == len(wins) || hi-lo > len(old[n]) {
			continue
		}
		copy(old[n][:], p.Data[lo:hi])
		wins[n] = win{u, lo, hi}
		n++
	}
	if !p.Set(f, v) {
		return false
	}
	for i := 0; i < n; i++ {
		w := wins[i]
		p.patch(w.u, old[i][:w.hi-w.lo], p.Data[w.lo:w.hi])
	}
	return true
}

// patch applies RFC 1624 to header u's checksum for bytes changed from
// old to new.
func (p *Packet) patch(u int, old, new []byte) {
	p.applyDelta(u, ChecksumDelta(old, new))
}

// applyDelta patches header u's checksum with a sum of changes.
func (p *Packet) applyDelta(u int, d uint64) {
	spec := p.Schema.Headers[u]
	field := FieldRef{u, spec.Checksum}
	if c, ok := p.Get(field); ok {
		p.Set(field, V(uint64(ApplyChecksumDelta(uint16(c.Lo), d, spec.ChecksumOptional))))
	}
}

// popUpdating removes header h, first taking its bytes out of the
// checksums in update that cover it (as if they had become zeros, which
// leaves the sum unchanged once they are gone).
func (p *Packet) popUpdating(h int, update []int) bool {
	b, ok := p.Bytes(h)
	if !ok {
		return false
	}
	for _, u := range update {
		spec := p.Schema.Headers[u]
		if !p.Valid(u) || spec.ChecksumKind == ChecksumHeader || p.Hdr[h].Off <= p.Hdr[u].Off ||
			len(b)%2 != 0 || (p.Hdr[h].Off-p.Hdr[u].Off)%2 != 0 {
			continue
		}
		p.applyDelta(u, PopDelta(b))
	}
	return p.Pop(h)
}

// The incremental updates as separate steps, for generated code that sums
// a node's field changes per checksum and patches each checksum once. The
// result equals patching after every change (the one's-complement sums
// fold the same way, and a zero UDP checksum stays zero throughout).

// ChecksumDelta is what changing the covered bytes old into new (one
// 16-bit-aligned window) adds to a checksum's sum: RFC 1624's ~m + m' word
// by word, each old word's complement and each new word an operand of the
// one's-complement sum, as the EJFAT specs count them (a sum is folded only
// when applied, and a checksum kept at 0xffff only when every operand is
// zero).
func ChecksumDelta(old, new []byte) uint64 {
	return uint64(len(old)+1)/2*0xffff - uint64(SumWords(old)) + uint64(SumWords(new))
}

// PopDelta is what removing the bytes b (an even number, at an even offset
// of the covered data) adds to a checksum's sum, as pop … update does: the
// complement of every word, each an operand (ChecksumDelta's old part).
func PopDelta(b []byte) uint64 {
	return uint64(len(b)+1)/2*0xffff - uint64(SumWords(b))
}

// ApplyChecksumDelta returns checksum c after changes that added d to the
// covered sum. optional is the header's RFC 768 rule: zero stays zero, a
// computed zero is sent as 0xffff.
func ApplyChecksumDelta(c uint16, d uint64, optional bool) uint16 {
	if optional && c == 0 {
		return 0
	}
	r := ^fold64(uint64(^c) + d)
	if optional && r == 0 {
		r = 0xffff
	}
	return r
}

// PseudoHeaderField reports whether f is a field an L4 checksum's update
// patches through the IP pseudo-header: ipv4 src, dst, total_len, proto, or
// ipv6 src, dst, payload_len (next_hdr sits at another byte position in the
// pseudo-header, so it is not patched).
func (s *Schema) PseudoHeaderField(f FieldRef) bool {
	ip := &s.ip
	return (f.Header == ip.v4 && (f.Field == ip.v4Src || f.Field == ip.v4Dst || f.Field == ip.v4Len || f.Field == ip.v4Proto)) ||
		(f.Header == ip.v6 && (f.Field == ip.v6Src || f.Field == ip.v6Dst || f.Field == ip.v6Payload))
}

// SumWords is the one's-complement sum of the big-endian 16-bit words of b
// (a trailing odd byte is the high byte of a word), not folded: Sum for the
// few bytes of a field's window.
func SumWords(b []byte) uint32 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

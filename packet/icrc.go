package packet

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
)

// The RoCEv2 invariant CRC (InfiniBand Architecture, Annex A17): a CRC-32
// (IEEE, as zlib's) over 8 bytes of 0xff standing for the LRH, then the IP
// header, the UDP header, the transport headers and the payload, with the
// fields a router may change read as ones: IPv4's TOS, TTL and header
// checksum (IPv6's traffic class, flow label and hop limit), UDP's
// checksum, and the byte of the BTH after the P_Key (FECN, BECN, resv6).
// It is the last 4 bytes of the IP payload, least significant byte first.

// ICRCLen is the length of the ICRC trailer.
const ICRCLen = 4

// ICRC computes the invariant CRC of the RoCEv2 packet in frame whose IP
// header starts at ip (IPv6 when v6) and whose BTH starts at bth, the UDP
// header being the 8 bytes before it; end is the end of the IP payload,
// the ICRC being the 4 bytes before it. The caller checks the offsets:
// ip+20 (or 40) <= bth-8, bth+12 <= end-4, end <= len(frame). The masked
// bytes are summed from package-level ones, so nothing is copied or
// allocated.
func ICRC(frame []byte, ip, bth, end int, v6 bool) uint32 {
	c := crc(0, ones[:]) // the LRH
	if v6 {
		c = crc(c, versionOnes[frame[ip]>>4][:]) // traffic class, flow label
		c = crc(c, ones[:3])
		c = crc(c, frame[ip+4:ip+7])
		c = crc(c, ones[:1]) // hop limit
		c = crc(c, frame[ip+8:bth-2])
	} else {
		c = crc(c, frame[ip:ip+1])
		c = crc(c, ones[:1]) // TOS
		c = crc(c, frame[ip+2:ip+8])
		c = crc(c, ones[:1]) // TTL
		c = crc(c, frame[ip+9:ip+10])
		c = crc(c, ones[:2]) // header checksum
		c = crc(c, frame[ip+12:bth-2])
	}
	c = crc(c, ones[:2]) // UDP checksum
	c = crc(c, frame[bth:bth+4])
	c = crc(c, ones[:1]) // FECN, BECN, resv6
	return crc(c, frame[bth+5:end-ICRCLen])
}

func crc(c uint32, b []byte) uint32 { return crc32.Update(c, crc32.IEEETable, b) }

// ones are masked bytes; versionOnes[v] is IPv6's first byte, version v
// with the traffic class's top nibble masked.
var (
	ones        = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	versionOnes = func() (v [16][1]byte) {
		for i := range v {
			v[i][0] = byte(i)<<4 | 0x0f
		}
		return v
	}()
)

// icrcRegion finds what the ICRC of a packet whose transport starts at
// header h covers: the IP header (by the IP convention), h 8 bytes after it
// (UDP in between), the end of the IP payload. ok is false when the
// packet's headers or lengths do not allow an ICRC.
func (p *Packet) icrcRegion(h int) (ip, bth, end int, v6, ok bool) {
	if !p.Valid(h) || p.Schema.Headers[h].Metadata {
		return 0, 0, 0, false, false
	}
	bth = p.Hdr[h].Off
	s := &p.Schema.ip
	switch {
	case s.v4 >= 0 && p.Valid(s.v4) && p.Hdr[s.v4].Off < bth:
		l, _ := p.Get(FieldRef{s.v4, s.v4Len})
		ip, end = p.Hdr[s.v4].Off, p.Hdr[s.v4].Off+int(min(l.Lo, 1<<16))
		ok = p.Hdr[s.v4].Len >= 20 && ip+p.Hdr[s.v4].Len == bth-8
	case s.v6 >= 0 && p.Valid(s.v6) && p.Hdr[s.v6].Off < bth:
		l, _ := p.Get(FieldRef{s.v6, s.v6Payload})
		ip, end, v6 = p.Hdr[s.v6].Off, p.Hdr[s.v6].Off+p.Hdr[s.v6].Len+int(min(l.Lo, 1<<16)), true
		ok = p.Hdr[s.v6].Len == 40 && ip+40 == bth-8
	}
	ok = ok && p.Hdr[h].Len >= 5 && bth+p.Hdr[h].Len <= end-ICRCLen && end <= len(p.Data)
	return ip, bth, end, v6, ok
}

// VerifyICRC checks the ICRC of the RoCEv2 packet whose transport starts at
// header h (the BTH). wellFormed is false when the covered bytes cannot be
// determined: no IP header right before UDP and h, lengths past the frame
// or inside h.
func (p *Packet) VerifyICRC(h int) (valid, wellFormed bool) {
	ip, bth, end, v6, ok := p.icrcRegion(h)
	if !ok {
		return false, false
	}
	return ICRC(p.Data, ip, bth, end, v6) == binary.LittleEndian.Uint32(p.Data[end-ICRCLen:end]), true
}

// ComputeICRC writes the ICRC of the RoCEv2 packet whose transport starts
// at header h into the last 4 bytes of the IP payload; false when they
// cannot be determined (as VerifyICRC's wellFormed).
func (p *Packet) ComputeICRC(h int) bool {
	ip, bth, end, v6, ok := p.icrcRegion(h)
	if !ok {
		return false
	}
	binary.LittleEndian.PutUint32(p.Data[end-ICRCLen:end], ICRC(p.Data, ip, bth, end, v6))
	return true
}

// ICRCMayWrite reports whether the ICRC of a transport starting at header h
// may be written over a field of wire header t: t follows h in the parse
// graph, or no parse edge leads to t (a pushed trailer, an extracted
// header). What `checksum compute icrc(h)` makes unknown.
func (s *Schema) ICRCMayWrite(h, t int) bool {
	if s.Headers[t].Metadata || t == h {
		return false
	}
	if slices.Contains(s.follow[h], t) {
		return true
	}
	return !slices.ContainsFunc(s.Next, func(e ParseEdge) bool { return e.To == t })
}

// Package segment cuts EJFAT events into segments as a sender does (spec
// ejfat-reassembly.md §3): each segment an LB v2 or v3 header, an RE
// header and as much of the event as the MTU allows, either as a UDP
// payload for a socket or as a whole Ethernet/IP/UDP frame, written into
// the caller's buffer without allocating.
package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Header lengths below the LB header.
const (
	EthLen  = frame.EthernetLen
	IPv4Len = frame.IPv4MinLen
	IPv6Len = frame.IPv6Len
	UDPLen  = frame.UDPLen
	// HeadersLen is the LB and RE headers in front of every payload.
	HeadersLen = ejfat.LBLen + ejfat.RELen
)

// ErrShortBuffer is Next's error for a buffer shorter than MaxLen.
var ErrShortBuffer = errors.New("segment: buffer shorter than a segment")

// Config describes a sender.
type Config struct {
	// MTU is the path MTU, the IP packet's largest length (9000 by
	// default).
	MTU int
	// LBVersion is the LB header's version, 2 (default) or 3.
	LBVersion uint8
	// Src and Dst are the sender's and the LB's data address and port;
	// their family chooses IPv4 or IPv6 (both the same).
	Src, Dst netip.AddrPort
	// Frames makes Next write Ethernet frames from SrcMAC to DstMAC, with
	// IP and UDP headers and checksums; otherwise it writes UDP payloads.
	Frames         bool
	SrcMAC, DstMAC net.HardwareAddr
	// PortSelect picks an event's v2 entropy or v3 port select, the same
	// for all of its segments; by default a hash of the event number and
	// data id, which spreads events over the receiver's ports.
	PortSelect func(number uint64, dataID uint16) uint16
	// SrcPortFromTick sets each frame's UDP source port to the low 16
	// bits of its tick, for LAG switch entropy (seed 000, "UDP Header");
	// with Frames only (a socket sends from its one port).
	SrcPortFromTick bool
}

// Segmenter cuts one event at a time; Start begins an event, Next writes
// its segments.
type Segmenter struct {
	cfg     Config
	ipLen   int
	payload int
	frame   frame.Datagram // Frames: the headers in front of each segment

	event      []byte
	number     uint64
	dataID     uint16
	portSelect uint16
	off        int
}

// New makes a Segmenter of cfg.
func New(cfg Config) (*Segmenter, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 9000
	}
	if cfg.LBVersion == 0 {
		cfg.LBVersion = 2
	}
	if cfg.PortSelect == nil {
		cfg.PortSelect = func(n uint64, id uint16) uint16 { return uint16(mix(n ^ uint64(id)<<48)) }
	}
	v6 := cfg.Src.Addr().Is6()
	s := &Segmenter{cfg: cfg, ipLen: IPv4Len}
	if v6 {
		s.ipLen = IPv6Len
	}
	s.payload = cfg.MTU - s.ipLen - UDPLen - HeadersLen
	switch {
	case cfg.LBVersion != 2 && cfg.LBVersion != 3:
		return nil, fmt.Errorf("segment: LB version %d, want 2 or 3", cfg.LBVersion)
	case s.payload < 1 || cfg.MTU > 65535:
		return nil, fmt.Errorf("segment: MTU %d leaves no payload or is too large", cfg.MTU)
	case !cfg.Src.IsValid() || !cfg.Dst.IsValid() || cfg.Dst.Addr().Is6() != v6 || cfg.Src.Addr().Is4In6() || cfg.Dst.Addr().Is4In6():
		return nil, fmt.Errorf("segment: addresses %v and %v not both IPv4 or both IPv6", cfg.Src, cfg.Dst)
	case cfg.SrcPortFromTick && !cfg.Frames:
		return nil, fmt.Errorf("segment: the source port from the tick needs frames")
	case cfg.Frames && (len(cfg.SrcMAC) != 6 || len(cfg.DstMAC) != 6):
		return nil, fmt.Errorf("segment: frames need 6-byte MACs, have %v and %v", cfg.SrcMAC, cfg.DstMAC)
	}
	s.frame = frame.Datagram{DstMAC: cfg.DstMAC, SrcMAC: cfg.SrcMAC, Src: cfg.Src, Dst: cfg.Dst, TTL: 64, DontFragment: true, Checksum: true}
	return s, nil
}

// PayloadSize is the event bytes in every segment but the last: MTU − IP −
// UDP − 16 − 20.
func (s *Segmenter) PayloadSize() int { return s.payload }

// MaxLen is the longest frame or datagram Next writes.
func (s *Segmenter) MaxLen() int {
	if s.cfg.Frames {
		return EthLen + s.cfg.MTU
	}
	return HeadersLen + s.payload
}

// Start begins cutting event (number, dataID), whose bytes the Segmenter
// reads until the last Next. An event must hold 1 to 2^32−1 bytes.
func (s *Segmenter) Start(event []byte, number uint64, dataID uint16) error {
	if len(event) == 0 || len(event) > math.MaxUint32 {
		return fmt.Errorf("segment: an event of %d bytes", len(event))
	}
	s.event, s.number, s.dataID, s.off = event, number, dataID, 0
	s.portSelect = s.cfg.PortSelect(number, dataID)
	return nil
}

// Next writes the event's next segment into buf and returns its length;
// io.EOF once every segment was written.
func (s *Segmenter) Next(buf []byte) (int, error) {
	if s.off >= len(s.event) {
		return 0, io.EOF
	}
	if len(buf) < s.MaxLen() {
		return 0, ErrShortBuffer
	}
	n := min(s.payload, len(s.event)-s.off)
	at := 0
	if s.cfg.Frames {
		at = s.frame.HeaderLen()
	}
	slot := uint16(0) // v2: reserved
	if s.cfg.LBVersion == 3 {
		slot = uint16(s.number) // the slot select v2 takes from the tick
	}
	ejfat.LBHeader(buf[at:at+ejfat.LBLen]).Encode(s.cfg.LBVersion, slot, s.portSelect, s.number)
	ejfat.RE(buf[at+ejfat.LBLen:]).Encode(s.dataID, uint32(s.off), uint32(len(s.event)), s.number)
	copy(buf[at+HeadersLen:], s.event[s.off:s.off+n])
	s.off += n
	end := at + HeadersLen + n
	if s.cfg.Frames {
		d := s.frame
		if s.cfg.SrcPortFromTick {
			d.Src = netip.AddrPortFrom(d.Src.Addr(), uint16(s.number))
		}
		d.Build(buf[:end])
	}
	return end, nil
}

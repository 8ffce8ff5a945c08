// Package pcapio reads captures as Ethernet frames and writes them, for
// every nsc command that takes or makes a pcap.
//
// Read takes pcap and pcapng files, every interface of a pcapng file (in
// file order), and these link types:
//
//   - Ethernet: the frames as captured.
//   - Linux cooked capture (SLL, link type 113, and SLL2, 276): the cooked
//     header is replaced by a synthetic Ethernet header: destination
//     00:00:00:00:00:00 (the capture does not say), source the captured
//     link-layer address when it has 6 bytes (else zero), EtherType the
//     header's protocol field. A protocol below 0x0600 (Linux's codes for
//     802.2/802.3 frames, CAN, ...) is no EtherType and is refused.
//   - Raw IP (101, and 228 for IPv4 only, 229 for IPv6 only): a synthetic
//     Ethernet header, both addresses zero, EtherType 0x0800 or 0x86DD by
//     the IP version nibble.
//
// Any other link type is refused, naming it and the file. Frames that
// cannot be converted (a truncated cooked header, an IP version that is
// neither 4 nor 6) are refused naming the file and the frame's number.
package pcapio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/packet/frame"
)

// Frame is one captured frame, as Ethernet.
type Frame struct {
	CI   gopacket.CaptureInfo
	Data []byte
}

// ReadFile reads every frame of the pcap or pcapng file name.
func ReadFile(name string) ([]Frame, error) {
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return Read(name, raw)
}

// Read reads every frame of a pcap or pcapng file's contents; name is for
// errors.
func Read(name string, raw []byte) ([]Frame, error) {
	src, err := open(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcap or pcapng file: %v", name, err)
	}
	var frames []Frame
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return frames, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %v", name, len(frames)+1, err)
		}
		link := src.link(ci)
		ci.AncillaryData = nil
		eth, err := toEthernet(link, data)
		if err != nil {
			return nil, fmt.Errorf("%s: frame %d: %w", name, len(frames)+1, err)
		}
		ci.Length += len(eth) - len(data)
		ci.CaptureLength = len(eth)
		frames = append(frames, Frame{ci, eth})
	}
}

// source is a pcap or pcapng reader and the way to learn a frame's link
// type from it.
type source struct {
	gopacket.PacketDataSource
	link func(gopacket.CaptureInfo) layers.LinkType
}

func open(raw []byte) (source, error) {
	r, err := pcapgo.NewReader(bytes.NewReader(raw))
	if err == nil {
		lt := r.LinkType()
		return source{r, func(gopacket.CaptureInfo) layers.LinkType { return lt }}, nil
	}
	// Mixed link types: every interface is read, each frame by its own.
	ng, ngErr := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if ngErr != nil {
		return source{}, err
	}
	return source{ng, func(ci gopacket.CaptureInfo) layers.LinkType {
		return ci.AncillaryData[0].(layers.LinkType)
	}}, nil
}

// UnsupportedLinkTypeError is a capture of a link type nsc cannot turn
// into Ethernet frames.
type UnsupportedLinkTypeError struct{ Link layers.LinkType }

func (e *UnsupportedLinkTypeError) Error() string {
	return fmt.Sprintf("link type %s (%d) is not supported: nsc reads Ethernet, Linux cooked (SLL, SLL2) and raw IP captures", e.Link, int(e.Link))
}

// toEthernet returns data, captured on link, as an Ethernet frame.
func toEthernet(link layers.LinkType, data []byte) ([]byte, error) {
	switch link {
	case layers.LinkTypeEthernet:
		return data, nil
	case layers.LinkTypeLinuxSLL:
		return fromCooked(data, 16, 14, 5, 6)
	case layers.LinkTypeLinuxSLL2:
		return fromCooked(data, 20, 0, 11, 12)
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return fromRawIP(link, data)
	}
	return nil, &UnsupportedLinkTypeError{link}
}

// fromCooked replaces a Linux cooked header of hdrLen bytes by an
// Ethernet header. The header has the protocol at offset proto, the
// address length's low byte at alen and the address at addr.
func fromCooked(data []byte, hdrLen, proto, alen, addr int) ([]byte, error) {
	if len(data) < hdrLen {
		return nil, fmt.Errorf("Linux cooked header truncated: %d of %d bytes", len(data), hdrLen)
	}
	etherType := binary.BigEndian.Uint16(data[proto:])
	if etherType < 0x0600 {
		return nil, fmt.Errorf("Linux cooked capture protocol 0x%04x is not an EtherType", etherType)
	}
	var src []byte
	if data[alen] == 6 {
		src = data[addr : addr+6]
	}
	return ethernet(src, etherType, data[hdrLen:]), nil
}

// fromRawIP puts an Ethernet header before an IP packet.
func fromRawIP(link layers.LinkType, data []byte) ([]byte, error) {
	version := -1
	if len(data) > 0 {
		version = int(data[0] >> 4)
	}
	switch {
	case version == 4 && link != layers.LinkTypeIPv6:
		return ethernet(nil, frame.TypeIPv4, data), nil
	case version == 6 && link != layers.LinkTypeIPv4:
		return ethernet(nil, frame.TypeIPv6, data), nil
	case version < 0:
		return nil, fmt.Errorf("empty frame in a raw IP capture")
	}
	return nil, fmt.Errorf("IP version %d in a raw IP capture (link type %d)", version, int(link))
}

// ethernet is payload behind an Ethernet header to 00:00:00:00:00:00 from
// src (zero when nil).
func ethernet(src []byte, etherType uint16, payload []byte) []byte {
	out := make([]byte, frame.EthernetLen+len(payload))
	frame.Ethernet(out).Encode(&frame.EthernetFields{Source: src, Type: etherType})
	copy(out[frame.EthernetLen:], payload)
	return out
}

// Writer writes Ethernet frames to a pcap file, all or nothing (see
// fileout): Commit puts the file in place, Abort or any error leaves
// none.
type Writer struct {
	out *fileout.File
	w   *pcapgo.Writer
	err error
}

// Create starts an Ethernet pcap at path.
func Create(path string) (*Writer, error) {
	out, err := fileout.Create(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{out: out, w: pcapgo.NewWriter(out)}
	if err := w.w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		out.Abort()
		return nil, err
	}
	return w, nil
}

// WritePacket writes data with ci's timestamp and interface; the first
// error sticks, and Commit returns it.
func (w *Writer) WritePacket(ci gopacket.CaptureInfo, data []byte) error {
	if w.err != nil {
		return w.err
	}
	ci.CaptureLength, ci.Length = len(data), len(data)
	w.err = w.w.WritePacket(ci, data)
	return w.err
}

// Commit puts the file in place, unless a write failed.
func (w *Writer) Commit() error {
	if w.err != nil {
		w.out.Abort()
		return w.err
	}
	return w.out.Commit()
}

// Abort removes the unfinished file; after Commit it does nothing.
func (w *Writer) Abort() { w.out.Abort() }

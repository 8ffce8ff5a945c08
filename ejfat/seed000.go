package ejfat

import (
	_ "embed"
	"io"
	"net"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Seed 000's "Data Source PCAP Generator Script": two transfers of a
// 1050-byte EVIO6 blob (all zeros) in 100-byte segments, one over IPv4 and
// one over IPv6, interleaved segment by segment.
const (
	Seed000BlobSize = 1050
	Seed000SegSize  = 100
)

// Seed000Frames rebuilds the frames of seed 000's scapy generator with
// gopacket, byte for byte as scapy writes them (testdata/seed000-scapy.pcap
// is scapy's own output): for each 100-byte segment of the blob, first
//
//	Ether(00:11:22:33:44:55 -> 00:aa:bb:cc:dd:ee) / IP(10.1.2.2 -> 10.1.2.3)
//	/ UDP(50000 -> 0x4c42) / LB v1(tick 10) / EVIO6(rocid 0xabc) / segment
//
// then
//
//	Ether(00:01:02:03:04:05 -> 00:aa:bb:cc:dd:ee) / IPv6(fe80::1 -> fe80::2)
//	/ UDP(12345 -> 0x4c42) / LB v1(tick 20) / EVIO6(rocid 0x123) / segment
//
// with scapy's defaults: IPv4 version 4, IHL 5, TOS 0, id 1, flags 0,
// TTL 64; IPv6 traffic class 0, flow label 0, hop limit 64; LB magic
// 0x4c42, version 1, protocol 1 (scapy's bind_layers to EVIO6); EVIO6
// version 0, flags first on offset 0, last on the final short segment;
// lengths and checksums computed (a zero UDP checksum sent as 0xffff).
func Seed000Frames() ([][]byte, error) {
	blob := make([]byte, Seed000BlobSize)
	var frames [][]byte
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	for off := 0; off < Seed000BlobSize; off += Seed000SegSize {
		var flags EVIO6Flags
		if off == 0 {
			flags |= EVIO6First
		}
		if off+Seed000SegSize > Seed000BlobSize {
			flags |= EVIO6Last
		}
		seg := gopacket.Payload(blob[off:min(off+Seed000SegSize, Seed000BlobSize)])

		eth4 := &layers.Ethernet{
			SrcMAC: mustMAC("00:11:22:33:44:55"), DstMAC: mustMAC("00:aa:bb:cc:dd:ee"),
			EthernetType: layers.EthernetTypeIPv4,
		}
		ip4 := &layers.IPv4{
			Version: 4, IHL: 5, Id: 1, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.ParseIP("10.1.2.2").To4(), DstIP: net.ParseIP("10.1.2.3").To4(),
		}
		udp4 := &layers.UDP{SrcPort: 50000, DstPort: LBPort}
		if err := udp4.SetNetworkLayerForChecksum(ip4); err != nil {
			return nil, err
		}
		lb4 := &LB{Magic: LBMagic, Version: 1, Protocol: 1, Tick: 10}
		ev4 := &EVIO6{Flags: flags, RocID: 0xabc, Offset: uint32(off)}
		f, err := serializeFrame(opts, eth4, ip4, udp4, lb4, ev4, seg)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)

		eth6 := &layers.Ethernet{
			SrcMAC: mustMAC("00:01:02:03:04:05"), DstMAC: mustMAC("00:aa:bb:cc:dd:ee"),
			EthernetType: layers.EthernetTypeIPv6,
		}
		ip6 := &layers.IPv6{
			Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP,
			SrcIP: net.ParseIP("fe80::1"), DstIP: net.ParseIP("fe80::2"),
		}
		udp6 := &layers.UDP{SrcPort: 12345, DstPort: LBPort}
		if err := udp6.SetNetworkLayerForChecksum(ip6); err != nil {
			return nil, err
		}
		lb6 := &LB{Magic: LBMagic, Version: 1, Protocol: 1, Tick: 20}
		ev6 := &EVIO6{Flags: flags, RocID: 0x123, Offset: uint32(off)}
		f, err = serializeFrame(opts, eth6, ip6, udp6, lb6, ev6, seg)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}
	return frames, nil
}

func serializeFrame(opts gopacket.SerializeOptions, ls ...gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// WritePcap writes frames to w as a pcap file of Ethernet frames (snap
// length 65535, as scapy's PcapWriter), one microsecond apart from the Unix
// epoch so that the file is the same on every run.
func WritePcap(w io.Writer, frames [][]byte) error {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return err
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{
			Timestamp:     time.Unix(0, int64(i)*int64(time.Microsecond)).UTC(),
			CaptureLength: len(f), Length: len(f),
		}
		if err := pw.WritePacket(ci, f); err != nil {
			return err
		}
	}
	return nil
}

// WriteSeed000Pcap writes Seed000Frames to w as a pcap file: seed 000's
// packets_in.pcap.
func WriteSeed000Pcap(w io.Writer) error {
	frames, err := Seed000Frames()
	if err != nil {
		return err
	}
	return WritePcap(w, frames)
}

// Seed000Tables is seed 000's control-plane script for the 2021 LB
// (testdata/seed000.tables), unchanged.
//
//go:embed testdata/seed000.tables
var Seed000Tables string

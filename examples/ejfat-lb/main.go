// Command ejfat-lb reproduces seed 000's test set-up of the 2021 EJFAT load
// balancer with nsc: it builds the data source pcap of seed 000's scapy
// generator (two interleaved transfers, IPv4 and IPv6), loads seed 000's
// control-plane script into the generated fast path of the lb-2021 model,
// runs every packet through it, writes what the LB sends, and says where
// each event went. A last packet with tick 11 shows the fate of an event
// whose calendar slot is empty.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
)

func main() {
	out := flag.String("o", "ejfat-lb-out", "directory for packets_in.pcap and packets_out.pcap")
	tables := flag.String("tables", "ejfat/testdata/seed000.tables", "seed 000's control-plane script")
	flag.Parse()
	if err := run(os.Stdout, *out, *tables); err != nil {
		fmt.Fprintln(os.Stderr, "ejfat-lb:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir, tablesFile string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	frames, err := ejfat.Seed000Frames()
	if err != nil {
		return err
	}
	in := filepath.Join(dir, "packets_in.pcap")
	if err := writePcap(in, frames); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s: %d frames, seed 000's two transfers of a 1050-byte blob in 100-byte segments\n", in, len(frames))

	script, err := os.ReadFile(tablesFile)
	if err != nil {
		return err
	}
	ts, err := lbfast.Tables("lb-2021", tablesFile, bytes.NewReader(script))
	if err != nil {
		return err
	}
	lb, err := lbfast.New("lb-2021", ts)
	if err != nil {
		return err
	}
	// One more event, tick 11: its calendar slot (11) has no member.
	frames = append(frames, withTick(frames[0], 11))
	var sent [][]byte
	buf := make([]byte, 2*packet.Headroom+2048)
	for i, f := range frames {
		tick := tickOf(f)
		n := copy(buf[packet.Headroom:], f)
		r := lb.Process(buf, packet.Headroom, n)
		if r.Sink < 0 {
			d := lb.DropSite(int(r.Drop))
			fmt.Fprintf(w, "event %2d  tick %2d  dropped at %s (%s)\n", i+1, tick, d.Node, d.Reason)
			continue
		}
		sent = append(sent, bytes.Clone(r.Data))
		fmt.Fprintf(w, "event %2d  tick %2d  %s\n", i+1, tick, describe(r.Data))
	}
	outFile := filepath.Join(dir, "packets_out.pcap")
	if err := writePcap(outFile, sent); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s: %d frames\n", outFile, len(sent))
	return nil
}

// tickOf reads the tick of an LB v1 frame.
func tickOf(frame []byte) uint64 {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	var lb ejfat.LB
	if udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); !ok || lb.DecodeFromBytes(udp.Payload, gopacket.NilDecodeFeedback) != nil {
		return 0
	}
	return lb.Tick
}

// withTick is frame (an IPv4 LB v1 packet) with another tick and its UDP
// checksum recomputed.
func withTick(frame []byte, tick uint64) []byte {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	payload := bytes.Clone(udp.Payload)
	binary.BigEndian.PutUint64(payload[4:], tick)
	udp.SetNetworkLayerForChecksum(ip)
	b := gopacket.NewSerializeBuffer()
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if err := gopacket.SerializeLayers(b, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		panic(err) // the layers came from a frame that decoded
	}
	return b.Bytes()
}

// describe says where a forwarded frame goes.
func describe(frame []byte) string {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	var dst net.IP
	if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		dst = ip.DstIP
	} else if ip, ok := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		dst = ip.DstIP
	}
	if udp == nil {
		return "sent back unchanged"
	}
	return fmt.Sprintf("-> member %s at %s port %d, %d bytes, LB header removed", eth.DstMAC, dst, udp.DstPort, len(frame))
}

func writePcap(name string, frames [][]byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := ejfat.WritePcap(f, frames); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

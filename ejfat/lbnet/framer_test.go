package lbnet_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
)

// TestFramer: the headers a worker frames datagrams with, kept from one
// datagram to the next of a source and MAC and patched for the length,
// are those frame.Datagram builds anew, whatever the source, the MAC
// and the length from one datagram to the next.
func TestFramer(t *testing.T) {
	dst := netip.MustParseAddrPort("127.1.2.3:19522")
	srcs := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("10.255.0.9:65535")}
	macs := []net.HardwareAddr{{0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}, {2, 0, 0, 0, 0, 1}}
	fr := lbnet.NewFramer(dst)
	buf := make([]byte, lbnet.FrameRoom+lbnet.MaxUDPPayload+packet.Headroom)
	for i, n := range []int{0, 1, 24, 24, 1040, 1040, 8000, 65507, 7, 300, 300, 9000} {
		src, mac := srcs[i/3%2], macs[i/5%2]
		for j := range n {
			buf[lbnet.FrameRoom+j] = byte(i + j)
		}
		off, size := fr.Frame(buf, mac, src, n)
		want := make([]byte, 14+20+8+n)
		copy(want[14+20+8:], buf[lbnet.FrameRoom:lbnet.FrameRoom+n])
		d := frame.Datagram{DstMAC: mac, Src: src, Dst: dst, TTL: 64}
		d.Build(want)
		if got := buf[off : off+size]; !bytes.Equal(got, want) {
			t.Fatalf("datagram %d (%d bytes from %v to %v): framed\n% x\nwant\n% x", i, n, src, mac, got[:42], want[:42])
		}
	}
}

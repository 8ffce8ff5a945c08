package ejfat

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/frame"
	"github.com/dragonet-go/nsc/sim"
)

// TestLinuxUDPRecvKernel holds the receiver's socket PRG
// (models/ejfat/hosts.nsc, LinuxUDPRecv) to the kernel it models: frames
// sent with an AF_PACKET socket over a veth pair between two network
// namespaces of the test's own, each
// lacking one thing the PRG says the kernel checks (the IPv4 header
// checksum, the UDP checksum, being whole and not a fragment, a UDP
// length within the frame, being UDP), and good ones (with a UDP checksum
// and with none, 0), go to a UDP socket. The socket gets exactly the
// frames that, in the interpreter, the reassembler embedded in the PRG
// takes past the PRG's checks, and the bytes of their datagrams. Were
// the kernel not to drop one of them, the embedding, which pruned the
// reassembler's own check, would pass it on.
func TestLinuxUDPRecvKernel(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		xdptest.Need(t, "no ip command")
	}
	tag := fmt.Sprint(os.Getpid())
	rxNS, txNS := "nscrecv-rx-"+tag, "nscrecv-tx-"+tag
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			if os.Geteuid() != 0 {
				xdptest.Need(t, fmt.Sprintf("ip %s: %v (network namespaces need root)", strings.Join(args, " "), err))
			}
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{rxNS, txNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	const rxMAC = "00:aa:bb:cc:dd:ee"
	ip("-n", rxNS, "link", "add", "vrx", "address", rxMAC, "type", "veth", "peer", "name", "vtx", "netns", txNS)
	ip("-n", rxNS, "addr", "add", "10.99.0.2/24", "dev", "vrx")
	ip("-n", rxNS, "link", "set", "vrx", "up")
	ip("-n", txNS, "link", "set", "vtx", "up")
	var conn *net.UDPConn
	xdptest.InNetns(t, rxNS, func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 99, 0, 2)})
		return err
	})
	defer conn.Close()
	var fd, ifindex int
	xdptest.InNetns(t, txNS, func() error {
		var err error
		fd, ifindex, err = xdptest.PacketSocket("vtx")
		return err
	})
	defer syscall.Close(fd)
	dst := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	mac, _ := net.ParseMAC(rxMAC)

	em := recvEmbedding(t)
	mach, err := sim.New(em.Graph, nil)
	if err != nil {
		t.Fatal(err)
	}
	const notForUs = "drop RxNotForUs: not a datagram for the socket"

	build := func(tag byte, sum bool, spoil func(f []byte)) []byte {
		payload := make([]byte, 40)
		for i := range payload {
			payload[i] = tag + byte(i)
		}
		d := frame.Datagram{DstMAC: mac, Src: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 99, 0, 1}), 40000+uint16(tag)), Dst: dst, TTL: 64, Checksum: sum}
		f := make([]byte, d.HeaderLen()+len(payload))
		copy(f[d.HeaderLen():], payload)
		d.Build(f)
		if spoil != nil {
			spoil(f)
		}
		return f
	}
	v4 := func(f []byte) frame.IPv4 { return frame.IPv4(f[frame.EthernetLen:]) }
	resum := func(f []byte) { // the IPv4 header checksum made good again
		v4(f).SetChecksum(0)
		v4(f).SetChecksum(^packet.Fold(packet.Sum(v4(f)[:frame.IPv4MinLen], 0)))
	}
	cases := []struct {
		name  string
		frame []byte
	}{
		{"good, UDP checksum", build(1, true, nil)},
		{"good, no UDP checksum (0)", build(2, false, nil)},
		{"bad IPv4 header checksum", build(3, true, func(f []byte) { v4(f)[10] ^= 0x55 })},
		{"bad UDP checksum", build(4, true, func(f []byte) { f[len(f)-1] ^= 0x55 })},
		{"a fragment (more fragments)", build(5, true, func(f []byte) { v4(f)[6] |= 0x20; resum(f) })},
		{"a fragment (offset)", build(6, true, func(f []byte) { v4(f)[7] = 8; resum(f) })},
		{"UDP length past the datagram", build(7, true, func(f []byte) { frame.UDP(v4(f)[frame.IPv4MinLen:]).SetLength(200) })},
		{"UDP length under the header", build(8, false, func(f []byte) { frame.UDP(v4(f)[frame.IPv4MinLen:]).SetLength(4) })},
		{"not UDP (protocol 253)", build(9, true, func(f []byte) { v4(f)[9] = 253; resum(f) })},
	}
	want := map[byte]bool{}
	for _, c := range cases {
		out := mach.Outcome(c.frame)
		tag := c.frame[len(c.frame)-40]
		if out.Where != notForUs {
			want[tag] = true
		}
		t.Logf("%s: interpreter %s", c.name, out.Where)
		to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6}
		copy(to.Addr[:], mac)
		if err := syscall.Sendto(fd, c.frame, 0, to); err != nil {
			t.Fatalf("%s: send: %v", c.name, err)
		}
	}
	if len(want) != 2 {
		t.Errorf("the interpreter takes %d frames past the PRG, want the 2 good ones", len(want))
	}
	got := map[byte]bool{}
	buf := make([]byte, 2048)
	for {
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		tag := buf[0]
		got[tag] = true
		for i := range n {
			if n != 40 || buf[i] != tag+byte(i) {
				t.Errorf("datagram %d: %d bytes % x", tag, n, buf[:n])
				break
			}
		}
	}
	for _, c := range cases {
		tag := c.frame[len(c.frame)-40]
		if got[tag] != want[tag] {
			t.Errorf("%s: the kernel delivered it: %v; the PRG says %v", c.name, got[tag], want[tag])
		}
	}
}

// TestLinuxUDPRecvEmbedding: the reassembler behind a receiver's sockets
// loses its parse and every check the kernel makes (IsUDP, V4Whole,
// V4Csum, UDPCsum, their drops); what reads the RE header, the place and
// the pops stay in software.
func TestLinuxUDPRecvEmbedding(t *testing.T) {
	em := recvEmbedding(t)
	for _, c := range []struct {
		kind  embed.Kind
		nodes []string
	}{
		{embed.Pruned, []string{"RxQueue", "IsUDP", "V4Whole", "V4Csum", "UDPCsum", "NotUDP", "Fragment", "BadIPv4Csum", "BadUDPCsum"}},
		{embed.Software, []string{"Family", "Ports", "RE", "RECheck", "UDPLength", "PopUDP", "PopEthernet", "Place", "Deliver"}},
	} {
		for _, n := range c.nodes {
			if p, ok := em.Placement(n); !ok || p.Kind != c.kind {
				t.Errorf("%s is %v (%s), want %v", n, p.Kind, p.Reason, c.kind)
			}
		}
	}
}

// recvEmbedding is the reassembler embedded in LinuxUDPRecv.
func recvEmbedding(t *testing.T) *embed.Embedding {
	t.Helper()
	return testutil.Embedding(t, "Reassembler", "LinuxUDPRecv", "ejfat/reassembler.nsc", "ejfat/hosts.nsc")
}

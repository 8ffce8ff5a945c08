package ejfat

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestXDPAttach attaches lb-2025's XDP program for real: two network
// namespaces joined by a veth pair, the LB's end carrying the program
// (with lb-2025.tables: the LB answers back out of the same veth, XDP_TX),
// the other end sending EJFAT frames built with gopacket over an
// AF_PACKET socket and receiving what comes back. What comes back must be
// what the interpreter sends for the same frames, and the program's
// counters must say so; the veths have a jumbo MTU and a 9,014-byte
// frame is answered too (TestXDPJumboEvents sends whole events at that
// MTU). No addresses are configured: raw frames only,
// inside the namespaces, which are removed at the end, failed or not.
func TestXDPAttach(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		xdptest.Need(t, "the ip command (iproute2) is missing")
	}
	// Generic XDP (in the stack, after the driver), and native XDP in the
	// veth driver; there the peer needs an XDP program of its own (one
	// that passes everything) to take the frames XDP_TX sends it.
	t.Run("generic", func(t *testing.T) { xdpAttach(t, link.XDPGenericMode) })
	t.Run("driver", func(t *testing.T) { xdpAttach(t, link.XDPDriverMode) })
}

func xdpAttach(t *testing.T, mode link.XDPAttachFlags) {
	r, m := xdpPair(t, "lb-2025")

	tag := fmt.Sprintf("%d-%d", os.Getpid(), mode)
	txNS := "nscxdp-tx-" + tag
	xdpVeth{lbNS: "nscxdp-lb-" + tag, lbDev: "vlb", lbMAC: "00:aa:bb:cc:dd:ee", peerNS: txNS, peerDev: "vtx", peerMAC: "00:11:22:33:44:55"}.up(t, r, mode)
	if err := r.ResetCounters(); err != nil {
		t.Fatal(err)
	}

	// A packet socket on the sender's end, opened in its namespace.
	var fd, ifindex int
	xdptest.InNetns(t, txNS, func() error {
		var err error
		fd, ifindex, err = xdptest.PacketSocket("vtx")
		return err
	})
	defer syscall.Close(fd)

	// EJFAT v2 frames to LB 0 (A.7's, with other ticks and entropies):
	// each goes to the member its calendar slot names.
	var frames [][]byte
	var want []string
	forwards := func(f []byte) {
		m.Run(f, func(n *dataflow.Node, data []byte) {
			if n.Name == "TxWire" {
				frames = append(frames, f)
				want = append(want, hex.EncodeToString(data))
			}
		})
	}
	for i := 0; i < 1000 && len(frames) < 32; i++ {
		lb := gplA7LB()
		lb.Tick, lb.Entropy = uint64(i), uint16(i*7)
		forwards(gplFrame(t, false, lb, gplA7Payload()))
	}
	if len(frames) < 32 {
		t.Fatalf("the interpreter forwards only %d frames: the test set-up is wrong", len(frames))
	}
	if forwards(gplFrame(t, false, gplA7LB(), make([]byte, 9014-14-20-8-16))); len(frames) != 33 {
		k, _ := m.LastDrop()
		t.Fatalf("the interpreter does not forward the 9,014-byte frame (%v): the test set-up is wrong", k)
	}
	to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6, Addr: [8]byte{0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}}
	for _, f := range frames {
		if err := syscall.Sendto(fd, f, 0, to); err != nil {
			t.Fatalf("send: %v", err)
		}
	}

	// Receive until every answer is in, for at most 5 seconds; frames
	// that are not the LB's answers (the kernel's own) are ignored.
	var got []string
	buf := make([]byte, 9014+1)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		n, from, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			t.Fatalf("receive: %v", err)
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == syscall.PACKET_OUTGOING {
			continue
		}
		f := buf[:n]
		if n < 42 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 17 || binary.BigEndian.Uint16(f[34:]) != 50000 {
			continue // not an answer to our frames
		}
		got = append(got, hex.EncodeToString(f))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("received %d frames, want the interpreter's %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	c, oversize, err := r.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.Sinks["TxWire"] != uint64(len(frames)) {
		t.Errorf("the program transmitted %d frames, want %d (counters %v)", c.Sinks["TxWire"], len(frames), c)
	}
	if oversize != 0 {
		t.Errorf("%d frames passed as oversize", oversize)
	}
	t.Logf("%d frames sent, %d answers back through XDP_TX, as the interpreter's", len(frames), len(got))
}

// xdpVeth is a veth pair between two network namespaces of a test's own,
// each end with its MAC address, MTU 9000.
type xdpVeth struct{ lbNS, lbDev, lbMAC, peerNS, peerDev, peerMAC string }

// up makes the namespaces and the pair (removed when t ends, failed or
// not) and attaches r's program to the LB's end in mode. In driver mode
// the peer carries a program that passes everything: the veth driver
// takes frames XDP_TX sends only into a peer with a program of its own,
// and at this MTU only programs loaded for fragments. It returns the ip
// command, which fails t.
func (v xdpVeth) up(t *testing.T, r *xdprun.Runner, mode link.XDPAttachFlags) func(args ...string) {
	t.Helper()
	ip := xdptest.Veth{NS: v.lbNS, Dev: v.lbDev, MAC: v.lbMAC, PeerNS: v.peerNS, PeerDev: v.peerDev, PeerMAC: v.peerMAC, MTU: 9000}.Up(t)
	attach := func(ns, dev string, prog *ebpf.Program) {
		xdptest.InNetns(t, ns, func() error {
			ifc, err := net.InterfaceByName(dev)
			if err != nil {
				return err
			}
			l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: mode})
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		})
	}
	attach(v.lbNS, v.lbDev, r.Program())
	if mode == link.XDPDriverMode {
		pass, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Flags: unix.BPF_F_XDP_HAS_FRAGS,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, xdprun.VerdictPass), asm.Return()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pass.Close() })
		attach(v.peerNS, v.peerDev, pass)
	}
	return ip
}

package lbnet_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/ejfat/lbnet/lbtest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/internal/xsk"
	"github.com/dragonet-go/nsc/packet/frame"
	"github.com/dragonet-go/nsc/packet/table"
)

// The addresses of BenchmarkAFXDP's veth pair: the LB's end and the
// peer's, where the senders and the members are.
var (
	benchLBAddr   = netip.MustParseAddrPort("10.1.2.3:19522")
	benchPeerAddr = netip.MustParseAddrPort("10.1.2.2:40000")
)

const benchLBMAC, benchPeerMAC = "00:aa:bb:cc:dd:ee", "00:11:22:33:44:55"

// BenchmarkAFXDP forwards the same traffic on a veth pair through
// lb-2025 on an AF_XDP socket (afxdp: HostRaw fast path, frames in place
// in the UMEM, out of the tx ring) and, the baseline, on a UDP socket
// (socket: LinuxUDP fast path behind recvmmsg and sendmmsg, as nsc lb
// --listen), one worker each, pinned to the first CPU. A thread pinned to
// the second sends from the peer's namespace, over an AF_PACKET socket
// with sendmmsg, one-datagram events of size bytes (LB header included)
// built once as the wire has them, alternating members, as fast as it
// can; two members in the peer's namespace count what arrives. Reported:
// packets/s, the members' (wall clock: the LB shares the two cores with
// the sender, the members and whatever else runs); delivered, their
// share of what was sent (the rest was dropped in front of the LB: rx
// ring or socket buffer full); packets/cpu-s, the frames the worker
// received per second its thread ran (user and kernel time: the system
// calls it makes; the kernel's receive work before the socket runs in
// the sender's thread, for both); allocs/op, the process's per packet
// (the sender and members allocate nothing).
func BenchmarkAFXDP(b *testing.B) {
	for _, size := range []int{24, 16 + 1024} {
		for _, kind := range []string{"afxdp", "socket"} {
			b.Run(fmt.Sprintf("size=%d/%s", size, kind), func(b *testing.B) { benchAFXDP(b, kind, size) })
		}
	}
}

func benchAFXDP(b *testing.B, kind string, size int) {
	v := benchVeth(b)
	var members [2]*counter
	xdptest.InNetns(b, v.PeerNS, func() error {
		for i := range members {
			c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(benchPeerAddr.Addr(), 0)))
			if err != nil {
				return err
			}
			members[i] = countOn(b, c, false)
		}
		return nil
	})
	peerMAC, _ := net.ParseMAC(benchPeerMAC)
	at := lbtest.Net{Senders: benchPeerAddr.Addr(), Members: benchPeerAddr.Addr(), MemberMAC: macValue(peerMAC)}
	script := at.Tables(benchLBAddr.Addr(), lbtest.Dest{ID: 0, Port: int(members[0].addr().Port())}, lbtest.Dest{ID: 1, Port: int(members[1].addr().Port())})

	cfg := lbnet.Config{Pin: true}
	pipeline := lbfast.NewSocket
	if kind == "afxdp" {
		cfg.XSK = []*xsk.Socket{xdptest.OpenXSK(b, v.NS, v.Dev, lbnet.XSKConfig)}
		pipeline = lbfast.New
	} else {
		xdptest.InNetns(b, v.NS, func() (err error) {
			cfg.Conns, err = lbnet.Listen(net.UDPAddrFromAddrPort(benchLBAddr), 1)
			return err
		})
		b.Cleanup(func() { cfg.Conns[0].Close() })
	}
	cfg.New = func(ts []*table.Table) (fastpath.Pipeline, error) { return pipeline("lb-2025", ts) }
	lb, err := lbnet.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	setTables(b, lb, script)

	send := frameWriter(senderSocket(b, v), benchFrames(size, 64))
	stop := start(b, lb)
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := lbnet.Pin(1); err != nil {
			b.Fatal(err)
		}
		for sent := 0; sent < b.N; {
			n, err := send()
			if err != nil {
				b.Fatal(err)
			}
			sent += n
		}
	}()
	b.StopTimer() // ns/op is the sender's; packets/s is the LB's
	received, last := waitIdle(members[:])
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(received)/last.Sub(began).Seconds(), "packets/s")
	b.ReportMetric(float64(received)/float64(b.N), "delivered")
	b.ReportMetric(float64(lb.Stats().Received)/lb.CPU().Seconds(), "packets/cpu-s")
	if s := lb.Stats(); s.Forwarded == 0 || s.Dropped != 0 {
		b.Fatalf("the LB forwarded nothing or dropped some: %+v %v", s, lb.Drops())
	}
}

// benchVeth is BenchmarkAFXDP's veth pair with its addresses, each end's
// neighbour known (no ARP among the frames) and IPv6 off.
func benchVeth(b *testing.B) xdptest.Veth {
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	v := xdptest.Veth{NS: "lbxb-" + tag, Dev: "lbxb", MAC: benchLBMAC, PeerNS: "lbxbp-" + tag, PeerDev: "lbxbp", PeerMAC: benchPeerMAC}
	ip := v.Up(b)
	v.DisableIPv6(b)
	ip("-n", v.NS, "addr", "add", benchLBAddr.Addr().String()+"/24", "dev", v.Dev)
	ip("-n", v.PeerNS, "addr", "add", benchPeerAddr.Addr().String()+"/24", "dev", v.PeerDev)
	ip("-n", v.NS, "neigh", "add", benchPeerAddr.Addr().String(), "lladdr", v.PeerMAC, "dev", v.Dev)
	ip("-n", v.PeerNS, "neigh", "add", benchLBAddr.Addr().String(), "lladdr", v.MAC, "dev", v.PeerDev)
	return v
}

// benchFrames are n frames from the peer to the LB, each an event of size
// bytes (ticks 0 to n-1: alternating members), with a UDP checksum.
func benchFrames(size, n int) [][]byte {
	lbMAC, _ := net.ParseMAC(benchLBMAC)
	peerMAC, _ := net.ParseMAC(benchPeerMAC)
	d := frame.Datagram{DstMAC: lbMAC, SrcMAC: peerMAC, Src: benchPeerAddr, Dst: benchLBAddr, TTL: 64, Checksum: true}
	fs := make([][]byte, n)
	for i := range fs {
		ev := lbtest.Event(uint64(i), size)
		fs[i] = make([]byte, d.HeaderLen()+len(ev))
		copy(fs[i][d.HeaderLen():], ev)
		d.Build(fs[i])
	}
	return fs
}

func macValue(mac net.HardwareAddr) (v uint64) {
	for _, c := range mac {
		v = v<<8 | uint64(c)
	}
	return v
}

// senderSocket is a packet socket on the peer's end that only sends
// (protocol 0: the kernel hands it no frame).
func senderSocket(b *testing.B, v xdptest.Veth) (fd int) {
	xdptest.InNetns(b, v.PeerNS, func() error {
		ifc, err := net.InterfaceByName(v.PeerDev)
		if err != nil {
			return err
		}
		if fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0); err != nil {
			return err
		}
		return syscall.Bind(fd, &syscall.SockaddrLinklayer{Ifindex: ifc.Index})
	})
	b.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// frameWriter sends the frames fs with one sendmmsg on the packet socket
// fd (bound to its interface), allocating nothing per call; it returns
// how many went.
func frameWriter(fd int, fs [][]byte) func() (int, error) {
	hdrs := make([]unix.Mmsghdr, len(fs))
	iovs := make([]unix.Iovec, len(fs))
	for i, f := range fs {
		iovs[i].Base = &f[0]
		iovs[i].SetLen(len(f))
		hdrs[i].Hdr.Iov = &iovs[i]
		hdrs[i].Hdr.SetIovlen(1)
	}
	return func() (int, error) {
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR, syscall.ENOBUFS:
			return 0, nil
		}
		return 0, e
	}
}

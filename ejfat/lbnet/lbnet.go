// Package lbnet runs an EJFAT LB fast path live on UDP sockets, the way a
// host without raw frame access runs it (the LinuxUDP PRG; use the fast
// paths generated for it, lbfast.NewSocket): the kernel
// receives and checks the datagrams addressed to the LB, the forwarder
// frames each one as the wire had it (Ethernet, IP and UDP headers rebuilt
// from the socket addresses), runs the frame through the fast path, and
// sends what the LB transmits to the address and port the LB wrote into
// it. The kernel builds the outgoing headers and checksums. Receive and
// send are batched (recvmmsg/sendmmsg through golang.org/x/net).
package lbnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
)

// MaxDatagram is the largest datagram forwarded (a jumbo frame's payload);
// longer ones are dropped and counted in Stats.Dropped.
const MaxDatagram = 9000

const (
	ethLen = 14
	udpLen = 8
)

// Stats count what the forwarder did; read them with atomic loads while it
// runs.
type Stats struct {
	Received, Forwarded, Dropped, SendErrors atomic.Uint64
}

// Forwarder forwards the datagrams arriving on one UDP socket.
type Forwarder struct {
	PL   fastpath.Pipeline
	Conn *net.UDPConn
	// MAC is the LB's own MAC: the Ethernet destination of rebuilt frames.
	MAC net.HardwareAddr
	// Batch is how many datagrams one system call moves (default 64).
	Batch int
	Stats Stats

	local  netip.AddrPort
	batch  batchConn
	bufs   [][]byte
	in     []ipv4.Message
	out    []ipv4.Message
	addrs  []net.UDPAddr
	ipsize int
}

// batchConn is what x/net's ipv4 and ipv6 packet conns have in common.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func (f *Forwarder) init() error {
	if f.Batch <= 0 {
		f.Batch = 64
	}
	if len(f.MAC) != 6 {
		return fmt.Errorf("lbnet: the LB's MAC must be 6 bytes, got %v", f.MAC)
	}
	f.local = f.Conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ip := f.local.Addr().Unmap()
	switch {
	case ip.IsUnspecified():
		return fmt.Errorf("lbnet: listen on the LB's own address (the one its IP filter admits), not %v", ip)
	case ip.Is4():
		f.ipsize = 20
		f.batch = ipv4.NewPacketConn(f.Conn)
	default:
		return fmt.Errorf("lbnet: IPv6 listen addresses are not supported yet (%v)", ip)
	}
	f.local = netip.AddrPortFrom(ip, f.local.Port())
	hdr := packet.Headroom + ethLen + f.ipsize + udpLen
	f.bufs = make([][]byte, f.Batch)
	f.in = make([]ipv4.Message, f.Batch)
	f.out = make([]ipv4.Message, f.Batch)
	f.addrs = make([]net.UDPAddr, f.Batch)
	for i := range f.bufs {
		// A byte more than MaxDatagram, so that a longer datagram, which
		// the socket cuts to the buffer, shows as too long.
		f.bufs[i] = make([]byte, hdr+MaxDatagram+1+packet.Headroom)
		f.in[i].Buffers = [][]byte{f.bufs[i][hdr : hdr+MaxDatagram+1]}
		f.out[i].Buffers = make([][]byte, 1)
	}
	return nil
}

// Run forwards until ctx ends or the socket fails.
func (f *Forwarder) Run(ctx context.Context) error {
	if err := f.init(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { f.Conn.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		n, err := f.batch.ReadBatch(f.in, 0)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		f.forward(n)
	}
}

// forward runs n received datagrams through the LB and sends the results.
func (f *Forwarder) forward(n int) {
	f.Stats.Received.Add(uint64(n))
	k := 0
	for i := 0; i < n; i++ {
		m := &f.in[i]
		src, ok := m.Addr.(*net.UDPAddr)
		if !ok || m.N > MaxDatagram {
			f.Stats.Dropped.Add(1)
			continue
		}
		off, size := f.frame(f.bufs[i], src, m.N)
		r := f.PL.Process(f.bufs[i], off, size)
		if r.Sink < 0 {
			f.Stats.Dropped.Add(1)
			continue
		}
		payload, to, ok := destination(r.Data)
		if !ok {
			f.Stats.Dropped.Add(1)
			continue
		}
		f.addrs[k] = net.UDPAddr{IP: to.Addr().AsSlice(), Port: int(to.Port())}
		f.out[k].Buffers[0] = payload
		f.out[k].Addr = &f.addrs[k]
		k++
	}
	for sent := 0; sent < k; {
		w, err := f.batch.WriteBatch(f.out[sent:k], 0)
		if err != nil {
			f.Stats.SendErrors.Add(uint64(k - sent))
			break
		}
		f.Stats.Forwarded.Add(uint64(w))
		sent += w
	}
}

// frame writes Ethernet, IPv4 and UDP headers in front of the n datagram
// bytes in buf, as they were on the wire (TTL 64, the IPv4 header checksum
// right; the UDP checksum 0, "none", which spares summing the payload: the
// kernel has checked it, and it frames what the LB sends anew), and returns
// the frame's offset and size.
func (f *Forwarder) frame(buf []byte, src *net.UDPAddr, n int) (off, size int) {
	off = packet.Headroom
	b := buf[off:]
	copy(b[0:6], f.MAC)
	clear(b[6:12])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[ethLen:]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(20+udpLen+n))
	binary.BigEndian.PutUint32(ip[4:], 0) // id, flags, fragment offset
	ip[8], ip[9] = 64, 17
	clear(ip[10:12])
	copy(ip[12:16], src.IP.To4())
	dst := f.local.Addr().As4()
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], packet.IPv4HeaderChecksum(ip[:20]))
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], uint16(src.Port))
	binary.BigEndian.PutUint16(u[2:], f.local.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen+n))
	binary.BigEndian.PutUint16(u[6:], 0) // none: the kernel has checked it, LinuxUDP takes 0 over IPv4
	return off, ethLen + 20 + udpLen + n
}

// destination reads, from a frame the LB sends, the UDP payload and the
// address and port it goes to.
func destination(frame []byte) (payload []byte, to netip.AddrPort, ok bool) {
	if len(frame) < ethLen+20+udpLen || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return nil, netip.AddrPort{}, false
	}
	ip := frame[ethLen:]
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl+udpLen {
		return nil, netip.AddrPort{}, false
	}
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	u := ip[ihl:]
	length := int(binary.BigEndian.Uint16(u[4:]))
	if length < udpLen || length > len(u) {
		return nil, netip.AddrPort{}, false
	}
	return u[udpLen:length], netip.AddrPortFrom(dst, binary.BigEndian.Uint16(u[2:])), true
}

// OwnMAC finds the LB's own MAC in its tables: the first unicast value of
// an exact `ethernet.dst` key (the MAC filter's entries).
func OwnMAC(tables []*packet.Table) (net.HardwareAddr, bool) {
	for _, t := range tables {
		for k, ks := range t.Spec().Keys {
			if ks.Name != "ethernet.dst" || ks.Kind != packet.Exact {
				continue
			}
			for _, e := range t.Entries() {
				v := e.Keys[k].Value.Lo
				if v>>40&1 == 0 { // not a group address
					mac := make(net.HardwareAddr, 8)
					binary.BigEndian.PutUint64(mac, v)
					return mac[2:], true
				}
			}
		}
	}
	return nil, false
}

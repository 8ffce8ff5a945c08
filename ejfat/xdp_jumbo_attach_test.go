package ejfat

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// jumboMembers is how many members TestXDPJumboEvents' LB spreads events
// over, each an address of the receivers' end, port jumboPort.
const (
	jumboMembers = 4
	jumboPort    = 0x4556
)

// jumboScript is lb-2025.tables with LB 0's calendars spreading its eight
// slots over jumboMembers members (epoch 1, ticks 16 to 31, one slot
// over from epoch 0), each member an IPv4 address 10.9.0.10+m of the
// receivers' end (MAC mac), port jumboPort, the LB header stripped.
func jumboScript(t testing.TB, mac net.HardwareAddr) []byte {
	t.Helper()
	base, err := os.ReadFile(xdpTables["lb-2025"])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(base)) {
		if !strings.HasPrefix(line, "table_add load_balance_calendar_table") && !strings.HasPrefix(line, "table_add member_info_lookup_table") {
			b.WriteString(line)
		}
	}
	for slot := range 8 {
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member 0 0 %d => %d\n", slot, slot%jumboMembers)
		fmt.Fprintf(&b, "table_add load_balance_calendar_table do_assign_member 0 1 %d => %d\n", slot, (slot+1)%jumboMembers)
	}
	for m := range jumboMembers {
		fmt.Fprintf(&b, "table_add member_info_lookup_table do_ipv4_member_rewrite 0 0x0800 %d => 0x%x 0x0a09000%x %#x 0 0\n", m, []byte(mac), 10+m, jumboPort)
	}
	return []byte(b.String())
}

// jumboEvent is the content of event n, size bytes long.
func jumboEvent(n uint64, size int) []byte {
	ev := make([]byte, size)
	for i := range ev {
		ev[i] = byte(uint64(i)*131 + n*7 + uint64(i)>>8)
	}
	return ev
}

// TestXDPJumboEvents sends EJFAT traffic at MTU 9000 through lb-2025's
// XDP program attached to a veth (loaded for multi-buffer frames: the
// kernel hands it each 9,014-byte frame as a head and fragments): 40
// events of 1 byte to 100 KB, cut into frames of up to 9,014 bytes as a
// sender cuts them, sent over an AF_PACKET socket from the other end, where
// the LB's members are UDP sockets on four addresses. Every event must
// arrive whole, its bytes checked, at the member the interpreter sends
// it to, and at no other; the kernel checked each datagram's IP and UDP
// checksums on the way in. Generic XDP and the veth driver's own; the
// namespaces (xmb-…) are removed at the end, failed or not.
func TestXDPJumboEvents(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		xdptest.Need(t, "the ip command (iproute2) is missing")
	}
	t.Run("generic", func(t *testing.T) { jumboEvents(t, link.XDPGenericMode) })
	t.Run("driver", func(t *testing.T) { jumboEvents(t, link.XDPDriverMode) })
}

func jumboEvents(t *testing.T, mode link.XDPAttachFlags) {
	rxMAC := net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	r, m := xdpPairScript(t, "lb-2025", jumboScript(t, rxMAC))

	tag := fmt.Sprintf("%d-%d", os.Getpid(), mode)
	rxNS := "xmb-rx-" + tag
	ip := xdpVeth{lbNS: "xmb-lb-" + tag, lbDev: "xmblb", lbMAC: "00:aa:bb:cc:dd:ee", peerNS: rxNS, peerDev: "xmbrx", peerMAC: rxMAC.String()}.up(t, r, mode)
	for k := range jumboMembers {
		ip("-n", rxNS, "addr", "add", fmt.Sprintf("10.9.0.%d/32", 10+k), "dev", "xmbrx")
	}
	// The LB's address, where the members' datagrams come from, is behind
	// the receivers' end (the reverse path filter may ask).
	ip("-n", rxNS, "route", "add", "10.1.2.0/24", "dev", "xmbrx")

	// The members: a UDP socket per address, in the receivers' namespace.
	socks := make([]*net.UDPConn, jumboMembers)
	xdptest.InNetns(t, rxNS, func() error {
		for k := range socks {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 9, 0, byte(10+k)), Port: jumboPort})
			if err != nil {
				return err
			}
			if err := c.SetReadBuffer(8 << 20); err != nil {
				return err
			}
			socks[k] = c
		}
		return nil
	})
	for _, c := range socks {
		t.Cleanup(func() { c.Close() })
	}
	var fd, ifindex int
	xdptest.InNetns(t, rxNS, func() error {
		var err error
		fd, ifindex, err = xdptest.PacketSocket("xmbrx")
		return err
	})
	defer syscall.Close(fd)

	// The events, cut into frames to LB 0 as a sender cuts them at MTU
	// 9000 (ticks: the event numbers), and the member the interpreter
	// sends each to.
	const events = 40
	const perFrame = 9000 - 20 - 8 - LBLen - RELen
	var frames [][]byte
	member := map[uint64]netip.Addr{}
	sizes := map[uint64]int{}
	for n := range uint64(events) {
		size := 1 + int(n*n*n*37)%100_000
		if n == events-1 {
			size = 100_000
		}
		sizes[n] = size
		ev := jumboEvent(n, size)
		for off := 0; off < size; off += perFrame {
			p := make([]byte, RELen+min(perFrame, size-off))
			RE(p).Encode(7, uint32(off), uint32(size), n)
			copy(p[RELen:], ev[off:])
			lb := gplA7LB()
			lb.Tick, lb.Entropy = n, uint16(n)
			frames = append(frames, gplFrame(t, false, lb, p))
		}
		m.Run(frames[len(frames)-1], func(node *dataflow.Node, data []byte) {
			if node.Name == "TxWire" && len(data) >= 34 {
				member[n] = netip.AddrFrom4([4]byte(data[30:34]))
			}
		})
		if !member[n].IsValid() {
			t.Fatalf("the interpreter does not forward event %d: the test set-up is wrong", n)
		}
	}
	jumbo := 0
	for _, f := range frames {
		if len(f) == 9014 {
			jumbo++
		}
	}

	// Receive on every member at once while the frames go out.
	type got struct {
		at     netip.Addr
		number uint64
		data   []byte // the event's bytes as far as they came, by offset
		bytes  int
	}
	var mu sync.Mutex
	arrived := map[[2]uint64]*got{} // (member's last byte, event number)
	var bad []string
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range socks {
		wg.Go(func() {
			buf := make([]byte, 65536)
			at := netip.MustParseAddrPort(c.LocalAddr().String()).Addr()
			c.SetReadDeadline(deadline)
			for {
				k, err := c.Read(buf)
				if err != nil {
					return // the deadline, or closed once every event is in
				}
				mu.Lock()
				re := RE(buf[:k])
				switch {
				case k < RELen || int(re.Length()) != sizes[re.EventNumber()] || int(re.Offset())+k-RELen > int(re.Length()):
					bad = append(bad, fmt.Sprintf("%v: a datagram of %d bytes, %x", at, k, buf[:min(k, RELen)]))
				default:
					key := [2]uint64{uint64(at.As4()[3]), re.EventNumber()}
					g := arrived[key]
					if g == nil {
						g = &got{at: at, number: re.EventNumber(), data: make([]byte, re.Length())}
						arrived[key] = g
					}
					g.bytes += copy(g.data[re.Offset():], buf[RELen:k])
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6, Addr: [8]byte{0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}}
	for i, f := range frames {
		if err := syscall.Sendto(fd, f, 0, to); err != nil {
			t.Fatalf("send frame %d: %v", i, err)
		}
		if i%32 == 31 {
			time.Sleep(time.Millisecond) // the veth's backlog holds 1,000 frames
		}
	}
	whole := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range arrived {
			if g.bytes == len(g.data) {
				n++
			}
		}
		return n
	}
	for whole() < events && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	for _, c := range socks {
		c.SetReadDeadline(time.Now())
	}
	wg.Wait()

	for _, s := range bad {
		t.Error(s)
	}
	for n := range uint64(events) {
		want := member[n]
		g := arrived[[2]uint64{uint64(want.As4()[3]), n}]
		switch {
		case g == nil:
			t.Errorf("event %d (%d bytes) did not reach its member %v", n, sizes[n], want)
		case g.bytes != len(g.data):
			t.Errorf("event %d: %d of %d bytes reached its member %v", n, g.bytes, len(g.data), want)
		case !bytes.Equal(g.data, jumboEvent(n, sizes[n])):
			t.Errorf("event %d: its bytes differ at %v", n, want)
		}
	}
	spread := map[netip.Addr]int{}
	for _, g := range arrived {
		if g.at != member[g.number] {
			t.Errorf("%d bytes of event %d reached %v, not its member %v", g.bytes, g.number, g.at, member[g.number])
		}
		spread[g.at]++
	}
	if len(spread) != jumboMembers {
		t.Errorf("the events reached %d members, want all %d: %v", len(spread), jumboMembers, spread)
	}
	c, oversize, err := r.Counters()
	if err != nil {
		t.Fatal(err)
	}
	// Drops are the kernel's own frames (IPv6 neighbour discovery from
	// the receivers' end), which the LB does not parse.
	if c.Sinks["TxWire"] != uint64(len(frames)) || oversize != 0 {
		t.Errorf("the program forwarded %d of %d frames (oversize %d, drops %v)", c.Sinks["TxWire"], len(frames), oversize, c.Drops)
	}
	if jumbo == 0 {
		t.Errorf("no 9,014-byte frame was sent")
	}
	t.Logf("%d events in %d frames (%d of 9,014 bytes) through XDP in %v, every one whole at its member: %v; drops %v", events, len(frames), jumbo, took.Round(time.Millisecond), spread, c.Drops)
}

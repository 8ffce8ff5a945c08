package udpbatch

import (
	"errors"
	"net/netip"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Bounds of one UDP_SEGMENT message: the kernel's UDP_MAX_SEGMENTS (64
// before Linux 6.x raised it), and a UDP datagram over IPv4.
const (
	MaxSegments = 64
	maxGSOBytes = 65535 - 20 - 8
)

// maxDestinations is how many destinations one Flush brings together;
// with more, the datagrams stay in the order they came.
const maxDestinations = 16

// Receiver receives into a fixed set of buffers, one datagram (or one
// coalesced run of them) each.
type Receiver struct{ m *mmsg }

// NewReceiver receives into bufs.
func NewReceiver(bufs [][]byte) *Receiver {
	m := newMmsg(len(bufs))
	for i, b := range bufs {
		m.setBuffer(i, b)
	}
	return &Receiver{m}
}

// Receive receives up to n messages (at most len(bufs); n < 1 is
// len(bufs)) with one recvmmsg (flags: MSG_DONTWAIT, or 0 to wait); the
// socket's deadline and closing end it as they end a Read.
func (r *Receiver) Receive(raw syscall.RawConn, n, flags int) (int, error) {
	if n < 1 || n > len(r.m.hdrs) {
		n = len(r.m.hdrs)
	}
	return r.m.recv(raw, n, flags)
}

// Datagram is what buffer i got: its length, the source (an IPv6 socket
// reports an IPv4 sender IPv4-mapped), whether the kernel truncated it, and, when the kernel coalesced
// datagrams of one flow into it (UDP_GRO), their size (the last may be
// shorter; 0: one datagram).
func (r *Receiver) Datagram(i int) (n int, from netip.AddrPort, truncated bool, segment int) {
	return r.m.received(i)
}

// Sender queues datagrams and sends them with one sendmmsg.
type Sender struct {
	m     *mmsg
	to    []netip.AddrPort // of each datagram queued
	first []int            // of each message made, its first datagram
	n     int              // datagrams queued
	sent  int              // of them, sent by an earlier Flush that failed
	// Scratch of byDestination: each datagram's destination (an index of
	// dests), and the queue in its new order.
	dest  []uint8
	dests []netip.AddrPort
	iovs  []unix.Iovec
	tos   []netip.AddrPort
	// GSO sends the datagrams to one destination, of one size but the
	// last, as one UDP_SEGMENT message; on by default, off once the kernel
	// refuses one.
	GSO bool
	// Segmented counts the UDP_SEGMENT messages made.
	Segmented uint64
}

// NewSender queues up to n datagrams.
func NewSender(n int) *Sender {
	return &Sender{m: newMmsg(n), to: make([]netip.AddrPort, n), first: make([]int, n+1), GSO: true,
		dest: make([]uint8, n), dests: make([]netip.AddrPort, 0, maxDestinations), iovs: make([]unix.Iovec, n), tos: make([]netip.AddrPort, n)}
}

// Len and Cap are the datagrams queued and the most that may be.
func (s *Sender) Len() int { return s.n }
func (s *Sender) Cap() int { return len(s.to) }

// Add queues payload (which must stay unchanged until it is sent) to to;
// an invalid to sends on a connected socket's peer.
func (s *Sender) Add(payload []byte, to netip.AddrPort) {
	s.m.setBuffer(s.n, payload)
	s.to[s.n] = to
	s.n++
}

// Reverse puts the datagrams queued from from on in reverse order.
func (s *Sender) Reverse(from int) {
	slices.Reverse(s.to[from:s.n])
	slices.Reverse(s.m.iovs[from:s.n])
}

// Flush sends the datagrams queued and returns how many went, each
// destination's in the order they were added (with GSO, those to one
// destination go together: an interleaving of members becomes one
// UDP_SEGMENT message per member). On an error
// it returns it, the datagrams before the failing message sent and the
// rest still queued: Flush again to retry them, or Reset to drop them. A
// kernel or device that refuses UDP_SEGMENT (EIO: no checksum offload;
// EINVAL: a kernel without it) turns GSO off, and the rest go one by one.
func (s *Sender) Flush(raw syscall.RawConn) (int, error) {
	from, done := s.sent, 0
	msgs := s.group(from)
	for m := 0; m < msgs; {
		k, err := s.m.send(raw, m, msgs)
		if (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL)) && s.GSO && s.first[m+1]-s.first[m] > 1 {
			s.GSO = false
			from = s.first[m]
			msgs, m = s.group(from), 0
			continue
		}
		if err != nil {
			s.sent = s.first[m]
			return done, err
		}
		done += s.first[m+k] - s.first[m]
		m += k
	}
	s.Reset()
	return done, nil
}

// Reset drops the datagrams queued.
func (s *Sender) Reset() { s.n, s.sent = 0, 0 }

// group makes messages of the datagrams queued from from on and returns
// their number; s.first[m] is message m's first datagram.
func (s *Sender) group(from int) int {
	if s.GSO {
		s.byDestination(from)
	}
	msg := 0
	for i := from; i < s.n; msg++ {
		size := int(s.m.iovs[i].Len)
		j, total := i+1, size
		for s.GSO && j < s.n && j-i < MaxSegments && s.to[j] == s.to[i] && int(s.m.iovs[j-1].Len) == size &&
			int(s.m.iovs[j].Len) <= size && total+int(s.m.iovs[j].Len) <= maxGSOBytes {
			total += int(s.m.iovs[j].Len)
			j++
		}
		s.first[msg] = i
		s.m.setSend(msg, i, j-i, size, s.to[i])
		if j-i > 1 {
			s.Segmented++
		}
		i = j
	}
	s.first[msg] = s.n
	return msg
}

// byDestination reorders the datagrams queued from from on by destination,
// in the order the destinations first appear, each destination's in the
// order they came (a counting sort): what goes to one member becomes
// consecutive, for UDP_SEGMENT. With more than maxDestinations, it leaves
// them as they are.
func (s *Sender) byDestination(from int) {
	dests := s.dests[:0]
	var counts [maxDestinations]int
	for i := from; i < s.n; i++ {
		k := 0
		for k < len(dests) && dests[k] != s.to[i] {
			k++
		}
		if k == len(dests) {
			if k == maxDestinations {
				return
			}
			dests = append(dests, s.to[i])
		}
		s.dest[i] = uint8(k)
		counts[k]++
	}
	if len(dests) < 2 {
		return
	}
	at := from
	for k := range dests {
		at, counts[k] = at+counts[k], at
	}
	for i := from; i < s.n; i++ {
		j := counts[s.dest[i]]
		counts[s.dest[i]]++
		s.iovs[j], s.tos[j] = s.m.iovs[i], s.to[i]
	}
	copy(s.m.iovs[from:s.n], s.iovs[from:s.n])
	copy(s.to[from:s.n], s.tos[from:s.n])
}

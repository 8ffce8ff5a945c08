package xsk

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

const (
	// FrameSize is a UMEM chunk's size: a page, the most a chunk may be
	// in the kernel's aligned mode.
	FrameSize = 4096
	// Headroom is what the kernel keeps in front of a received frame in
	// its chunk (XDP_PACKET_HEADROOM); a frame starts there.
	Headroom = unix.XDP_PACKET_HEADROOM
	// DefaultFrames is the UMEM's size in chunks when Config.Frames is 0
	// (16 MiB).
	DefaultFrames = 4096
	// kicks bounds the sendto calls of one Flush: copy mode sends 32
	// frames a call (the kernel's TX_BATCH_SIZE) and says EAGAIN while
	// more are left, so the whole tx ring goes in DefaultFrames/32.
	kicks = DefaultFrames / 32 * 2
)

var (
	// ErrPermission is what Open fails with when the process may not
	// open AF_XDP sockets or load BPF programs.
	ErrPermission = errors.New("AF_XDP and XDP programs need CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (run as root)")
	// ErrClosed is what a closed socket's counters say.
	ErrClosed = errors.New("xsk: socket closed")
)

// Config sizes a socket.
type Config struct {
	// Frames is the UMEM's size in chunks of FrameSize bytes, and each
	// ring's in entries: a power of two (0: DefaultFrames).
	Frames int
	// Tailroom is what a frame keeps free after it in its chunk: frames
	// longer than FrameSize - Headroom - Tailroom (MaxLen) stay with the
	// kernel.
	Tailroom int
	// Mode is the XDP attach mode (0: driver mode where the driver has
	// it, else generic).
	Mode link.XDPAttachFlags
}

// Socket is an AF_XDP socket bound to one queue of an interface, with
// its UMEM, its rings and the program that feeds it.
type Socket struct {
	fd         int
	umem       []byte
	frames     int
	maxLen     int
	fill, comp ring
	rx, tx     ring
	fills      []uint64 // the fill ring's entries
	comps      []uint64
	rxs, txs   []unix.XDPDesc
	poll       [1]unix.PollFd

	sockets, long *ebpf.Map
	prog          *ebpf.Program
	link          link.Link
}

// Open opens a socket on queue of interface ifname, fills the fill ring
// with every chunk and attaches the redirect program.
func Open(ifname string, queue int, cfg Config) (_ *Socket, err error) {
	if cfg.Frames == 0 {
		cfg.Frames = DefaultFrames
	}
	maxLen := FrameSize - Headroom - cfg.Tailroom
	switch {
	case cfg.Frames < 2 || cfg.Frames&(cfg.Frames-1) != 0:
		return nil, fmt.Errorf("xsk: %d frames: must be a power of two, at least 2", cfg.Frames)
	case maxLen < 64:
		return nil, fmt.Errorf("xsk: tailroom %d leaves no room for a frame in %d bytes", cfg.Tailroom, FrameSize)
	case queue < 0:
		return nil, fmt.Errorf("xsk: queue %d: must not be negative", queue)
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("xsk: %w", err)
	}
	// bind says only EINVAL for a queue the interface lacks.
	if rx, _ := filepath.Glob("/sys/class/net/" + ifname + "/queues/rx-*"); len(rx) > 0 && queue >= len(rx) {
		return nil, fmt.Errorf("xsk: %s has %d receive queues, no queue %d", ifname, len(rx), queue)
	}
	s := &Socket{fd: -1, frames: cfg.Frames, maxLen: maxLen}
	defer func() {
		if err != nil {
			s.Close()
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: %w", err, ErrPermission)
			}
			err = fmt.Errorf("xsk: %s queue %d: %w", ifname, queue, err)
		}
	}()
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := unix.Bind(s.fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifc.Index), QueueID: uint32(queue)}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	for i := range s.frames {
		s.Recycle(uint64(i * FrameSize))
	}
	s.fill.publish()
	if s.sockets, s.long, err = maps(queue); err != nil {
		return nil, err
	}
	if err := s.sockets.Put(uint32(queue), uint32(s.fd)); err != nil {
		return nil, fmt.Errorf("XSKMAP: %w", err)
	}
	if s.prog, err = redirect(s.sockets, s.long, maxLen); err != nil {
		return nil, fmt.Errorf("redirect program: %w", err)
	}
	if s.link, err = link.AttachXDP(link.XDPOptions{Program: s.prog, Interface: ifc.Index, Flags: cfg.Mode}); err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	return s, nil
}

// open makes the socket, registers the UMEM and maps the rings.
func (s *Socket) open() error {
	var err error
	if s.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	s.poll[0] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	if s.umem, err = unix.Mmap(-1, 0, s.frames*FrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: FrameSize}
	if err := setsockopt(s.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("UMEM: %w", err)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, opt, s.frames); err != nil {
			return fmt.Errorf("ring size: %w", err)
		}
	}
	var off unix.XDPMmapOffsets
	size := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		return fmt.Errorf("ring offsets: %w", e)
	}
	n := s.frames
	for _, r := range []struct {
		r     *ring
		pgoff int64
		off   unix.XDPRingOffset
		size  int
	}{
		{&s.fill, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, 8},
		{&s.comp, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, 8},
		{&s.rx, unix.XDP_PGOFF_RX_RING, off.Rx, int(unsafe.Sizeof(unix.XDPDesc{}))},
		{&s.tx, unix.XDP_PGOFF_TX_RING, off.Tx, int(unsafe.Sizeof(unix.XDPDesc{}))},
	} {
		if *r.r, err = mapRing(s.fd, r.pgoff, r.off, n, r.size); err != nil {
			return fmt.Errorf("rings: %w", err)
		}
	}
	s.fills, s.comps = entries[uint64](&s.fill, off.Fr, n), entries[uint64](&s.comp, off.Cr, n)
	s.rxs, s.txs = entries[unix.XDPDesc](&s.rx, off.Rx, n), entries[unix.XDPDesc](&s.tx, off.Tx, n)
	return nil
}

func setsockopt(fd, opt int, v unsafe.Pointer, size uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(v), size, 0); e != 0 {
		return e
	}
	return nil
}

// MaxLen is the longest frame the socket receives; the program passes
// longer ones to the kernel (Long counts them).
func (s *Socket) MaxLen() int { return s.maxLen }

// Receive takes up to len(descs) frames off the rx ring into descs,
// waiting up to timeout for one when there is none, and returns how many.
// Each is the caller's until it gives it to Transmit or Recycle.
func (s *Socket) Receive(descs []unix.XDPDesc, timeout time.Duration) (int, error) {
	n := s.rx.available()
	if n == 0 && timeout > 0 {
		if _, err := unix.Poll(s.poll[:], int(timeout.Milliseconds())); err != nil && err != unix.EINTR {
			return 0, fmt.Errorf("xsk: poll: %w", err)
		}
		n = s.rx.available()
	}
	n = min(n, uint32(len(descs)))
	for i := range n {
		descs[i] = s.rxs[(s.rx.head+i)&s.rx.mask]
	}
	s.rx.consume(n)
	return int(n), nil
}

// Chunk returns the chunk holding the frame at addr, and the frame's
// offset in it.
func (s *Socket) Chunk(addr uint64) ([]byte, int) {
	base := addr &^ (FrameSize - 1)
	return s.umem[base : base+FrameSize : base+FrameSize], int(addr - base)
}

// Transmit queues the n bytes at addr for sending (Flush sends them), and
// says false when the tx ring is full even after a Flush: the frame is
// then still the caller's.
func (s *Socket) Transmit(addr uint64, n int) bool {
	if s.tx.room() == 0 {
		s.Flush()
		if s.tx.room() == 0 {
			return false
		}
	}
	s.txs[s.tx.head&s.tx.mask] = unix.XDPDesc{Addr: addr, Len: uint32(n)}
	s.tx.head++
	return true
}

// Recycle gives the chunk holding addr back to the kernel to receive
// into (Flush publishes it).
func (s *Socket) Recycle(addr uint64) {
	s.fills[s.fill.head&s.fill.mask] = addr &^ (FrameSize - 1)
	s.fill.head++
}

// Flush publishes the recycled chunks and the queued frames, has the
// kernel send the frames, and recycles the chunks it has sent. Frames the
// kernel cannot take now stay queued for the next Flush.
func (s *Socket) Flush() error {
	var err error
	s.tx.publish()
	for range kicks {
		if s.tx.unsent() == 0 {
			break
		}
		err = unix.Sendto(s.fd, nil, unix.MSG_DONTWAIT, nil)
		if err == unix.EAGAIN || err == unix.EBUSY || err == unix.ENOBUFS {
			err = nil // more to send, or the completion ring to empty
			s.complete()
		}
		if err != nil {
			break
		}
	}
	s.complete()
	s.fill.publish()
	if err != nil {
		return fmt.Errorf("xsk: send: %w", err)
	}
	return nil
}

// complete recycles the chunks the kernel has sent.
func (s *Socket) complete() {
	n := s.comp.available()
	for i := range n {
		s.Recycle(s.comps[(s.comp.head+i)&s.comp.mask])
	}
	s.comp.consume(n)
}

// Long is how many frames the program passed to the kernel for being
// longer than MaxLen.
func (s *Socket) Long() (uint64, error) {
	if s.long == nil {
		return 0, ErrClosed
	}
	var per []uint64
	if err := s.long.Lookup(uint32(0), &per); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// Statistics are the socket's kernel counters (XDP_STATISTICS): among
// them the frames dropped for want of room in the rx ring or of chunks
// in the fill ring.
func (s *Socket) Statistics() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	size := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS, uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		return st, e
	}
	return st, nil
}

// Close detaches the program and closes and unmaps everything.
func (s *Socket) Close() error {
	var err error
	if s.link != nil {
		err = s.link.Close()
		s.link = nil
	}
	if s.prog != nil {
		s.prog.Close()
		s.prog = nil
	}
	for _, m := range []**ebpf.Map{&s.sockets, &s.long} {
		if *m != nil {
			(*m).Close()
			*m = nil
		}
	}
	for _, r := range []*ring{&s.fill, &s.comp, &s.rx, &s.tx} {
		r.unmap()
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.umem != nil {
		unix.Munmap(s.umem)
		s.umem = nil
	}
	return err
}

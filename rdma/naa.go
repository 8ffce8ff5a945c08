package rdma

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// The status a result's immediate carries (NAAICE): 0 for success.
const (
	StatusOK       = 0x00
	StatusNoSocket = 0x01 // no kernel answers the function code
	StatusTimeout  = 0x02 // the kernel did not finish in time
	StatusAppError = 0x10 // the first application error (0x10–0x7f)
	// StatusTooLarge is the application error of a result larger than
	// the client's region.
	StatusTooLarge = 0x11
)

// Kernel is a function the accelerator runs on its input region: the
// result and its status (StatusOK, or an application error).
type Kernel func(in []byte) (out []byte, status uint32)

// Config is a host and an NAA on the loopback interface.
type Config struct {
	Memory  int               // bytes of FPGA memory
	Kernels map[uint32]Kernel // by function code
	Timeout time.Duration     // a kernel's (0: none)
	IRN     bool              // IRN's responder and selective repeat, not go-back-N
	MTU     int               // payload bytes a packet (4096 if 0)
	Window  int               // packets in flight (64 if 0; at most 128 with IRN)
	Loss    int               // every Loss-th packet a requester sends is lost (0: none)
}

// Queue pairs of the loopback: the NAA's responder QP and the host's, the
// PSNs they start at (the host's close to 2^24, so that results wrap).
const (
	naaQP, hostQP     = 0x11, 0x22
	naaIPSN, hostIPSN = 0x1000, 0xfffc00
)

// NAA is the accelerator's side: a responder that takes the host's
// SENDs and WRITEs into regions of its memory, and a requester that sends
// MRSP replies and writes results into the host's regions.
type NAA struct {
	cfg     Config
	memory  []byte
	resp    *Responder
	req     *Requester
	nextKey uint32
	taken   int // regions registered (the responder's goroutine)
	jobs    chan func()
	stop    chan struct{}
	// The worker's: the regions the host asked for, and its own, where
	// results go.
	inputs  []*Region
	results []MR
}

// Host is the HPC node's side: it sets regions up with MRSP, writes its
// input and the function code, and receives the result in its regions.
type Host struct {
	resp    *Responder
	req     *Requester
	Regions []*Region // where results land
	done    chan Completion
}

// MessageSize is the most a Host's WRITE message carries: a larger input
// is several.
const MessageSize = 16 << 20

// Loopback starts a host and an NAA on 127.0.0.1 (four UDP sockets, each
// side serving its responder), the host with one result region of
// resultSize bytes. Close stops both.
func Loopback(cfg Config, resultSize int) (*Host, *NAA, func(), error) {
	if cfg.MTU == 0 {
		cfg.MTU = 4096
	}
	if cfg.Window == 0 {
		cfg.Window = 64
	}
	var conns []net.PacketConn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	sock := func() (net.PacketConn, Endpoint, error) {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, Endpoint{}, err
		}
		conns = append(conns, c)
		if err := c.(*net.UDPConn).SetReadBuffer(4 << 20); err != nil {
			return nil, Endpoint{}, err
		}
		a := c.LocalAddr().(*net.UDPAddr)
		return c, Endpoint{IP: a.IP.To4(), Port: uint16(a.Port)}, nil
	}
	var eps [4]Endpoint
	var cs [4]net.PacketConn
	for i := range cs {
		c, ep, err := sock()
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		cs[i], eps[i] = c, ep
	}
	hq, hr, nq, nr := 0, 1, 2, 3 // host requester and responder, NAA's
	requester := func(from, to int, qpn, psn uint32) *Requester {
		return &Requester{Conn: cs[from], To: cs[to].LocalAddr(), Src: eps[from], Dst: eps[to], QPN: qpn, PSN: psn,
			MTU: cfg.MTU, Window: cfg.Window, AckEvery: 16, Timeout: 20 * time.Millisecond, IRN: cfg.IRN, Loss: cfg.Loss}
	}
	newResp := NewResponder
	if cfg.IRN {
		newResp = NewIRNResponder
	}
	h := &Host{req: requester(hq, nr, naaQP, naaIPSN), done: make(chan Completion, 16),
		Regions: []*Region{{RKey: 0xbeef, Base: 0x20000, Mem: make([]byte, resultSize)}}}
	n := &NAA{cfg: cfg, memory: make([]byte, cfg.Memory), req: requester(nq, hr, hostQP, hostIPSN), nextKey: 0xa000, jobs: make(chan func(), 16)}
	var err error
	if h.resp, err = newResp([]QP{{QPN: hostQP, IPSN: hostIPSN, Peer: 0x12}}, h.Regions); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	if n.resp, err = newResp([]QP{{QPN: naaQP, IPSN: naaIPSN, Peer: 0x21}}, nil); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	stop := make(chan struct{})
	n.stop = stop
	go n.resp.Serve(cs[nr], eps[nr], n.completed)
	go h.resp.Serve(cs[hr], eps[hr], func(c Completion) {
		select {
		case h.done <- c:
		case <-stop:
		}
	})
	go func() { // the NAA's work, one job at a time, off the responder's goroutine
		for {
			select {
			case job := <-n.jobs:
				job()
			case <-stop:
				return
			}
		}
	}()
	return h, n, func() { close(stop); closeAll() }, nil
}

// completed takes what the NAA's responder completed: an MRSP message
// (answered here, where the responder's regions may change) or a function
// code (queued for the kernels).
func (n *NAA) completed(c Completion) {
	// A requester that gets no ACK returns its error; the host then hears
	// nothing and times out, which is what it can tell of a lost NAA.
	job := func() { _ = n.call(c.Imm) }
	if c.Send {
		reply, inputs, results := n.mrsp(c.Msg)
		job = func() {
			n.inputs, n.results = append(n.inputs, inputs...), append(n.results, results...)
			_ = n.req.Send(reply)
		}
	}
	select {
	case n.jobs <- job:
	case <-n.stop:
	}
}

// mrsp registers the regions an Advertisement and Request asks for and
// returns the Advertisement of them (or the Error), the regions and the
// host's regions it advertised.
func (n *NAA) mrsp(msg []byte) ([]byte, []*Region, []MR) {
	m, err := ParseMRSP(msg)
	if err != nil || m.Type != MRSPAdvertiseRequest {
		return AppendMRSPError(nil, MRSPInvalidAddress), nil, nil
	}
	if len(m.Requests) > MaxRegions-n.taken {
		return AppendMRSPError(nil, MRSPTooManyRegions), nil, nil
	}
	var ads []MR
	var regions []*Region
	for _, r := range m.Requests {
		switch {
		case r.FPGAAddr >= uint64(len(n.memory)):
			return AppendMRSPError(nil, MRSPInvalidAddress), nil, nil
		case r.FPGAAddr+uint64(r.Size) > uint64(len(n.memory)) || r.Size > MaxRegionSize:
			return AppendMRSPError(nil, MRSPNoMemory), nil, nil
		}
		g := &Region{RKey: n.nextKey, Base: r.FPGAAddr, Mem: n.memory[r.FPGAAddr : r.FPGAAddr+uint64(r.Size)]}
		n.nextKey++
		regions = append(regions, g)
		ads = append(ads, MR{Addr: g.Base, RKey: g.RKey, Size: r.Size})
	}
	for _, g := range regions {
		if err := n.resp.Register(g); err != nil {
			return AppendMRSPError(nil, MRSPTooManyRegions), nil, nil
		}
	}
	n.taken += len(regions)
	var results []MR
	for _, r := range m.Requests {
		results = append(results, r.MR)
	}
	return AppendAdvertise(nil, ads), regions, results
}

// call runs the kernel of function code fn on the first input region and
// writes its result into the host's first region, the status as the
// immediate.
func (n *NAA) call(fn uint32) error {
	var out []byte
	status := uint32(StatusNoSocket)
	if k := n.cfg.Kernels[fn]; k != nil && len(n.inputs) > 0 {
		out, status = n.run(k, n.inputs[0].Mem)
	}
	var dst MR
	if len(n.results) > 0 {
		dst = n.results[0]
	}
	if len(out) > int(dst.Size) {
		out, status = nil, StatusTooLarge
	}
	return n.req.Write(out, dst.Addr, dst.RKey, status, true)
}

// run runs k, giving up after the configured timeout.
func (n *NAA) run(k Kernel, in []byte) ([]byte, uint32) {
	if n.cfg.Timeout == 0 {
		return k(in)
	}
	type result struct {
		out    []byte
		status uint32
	}
	ch := make(chan result, 1)
	go func() {
		out, s := k(in)
		ch <- result{out, s}
	}()
	select {
	case r := <-ch:
		return r.out, r.status
	case <-time.After(n.cfg.Timeout):
		return nil, StatusTimeout
	}
}

// MRSPErr is the Error an NAA answered an MRSP request with.
type MRSPErr struct{ Code uint8 }

func (e *MRSPErr) Error() string {
	what := map[uint8]string{MRSPNoMemory: "not enough memory", MRSPInvalidAddress: "invalid address", MRSPTooManyRegions: "too many regions"}[e.Code]
	return fmt.Sprintf("rdma: MRSP error %#02x (%s)", e.Code, what)
}

// ErrNoReply is a wait for the NAA that timed out.
var ErrNoReply = errors.New("rdma: no reply from the NAA")

// Setup asks the NAA for input regions the size of the host's result
// regions at the FPGA addresses given, advertising the host's: the NAA's
// regions, or an *MRSPErr.
func (h *Host) Setup(fpga []uint64, wait time.Duration) ([]MR, error) {
	var rs []MRRequest
	for i, a := range fpga {
		g := h.Regions[min(i, len(h.Regions)-1)]
		rs = append(rs, MRRequest{FPGAAddr: a, MR: MR{Addr: g.Base, RKey: g.RKey, Size: uint32(len(g.Mem))}})
	}
	if err := h.req.Send(AppendAdvertiseRequest(nil, rs)); err != nil {
		return nil, err
	}
	c, err := h.wait(wait)
	if err != nil {
		return nil, err
	}
	m, err := ParseMRSP(c.Msg)
	switch {
	case err != nil:
		return nil, err
	case m.Type == MRSPError:
		return nil, &MRSPErr{m.Code}
	}
	return m.Regions, nil
}

// Call writes input into the NAA's region in, in WRITEs of MessageSize,
// the last a WRITE with Immediate whose immediate is the function code,
// and waits for the result: its status (the result is in h.Regions[0]).
func (h *Host) Call(fn uint32, input []byte, in MR, wait time.Duration) (uint32, error) {
	for off := 0; off < len(input) || off == 0; off += MessageSize {
		end := min(off+MessageSize, len(input))
		if err := h.req.Write(input[off:end], in.Addr+uint64(off), in.RKey, fn, end == len(input)); err != nil {
			return 0, err
		}
		if end == len(input) {
			break
		}
	}
	c, err := h.wait(wait)
	if err != nil {
		return 0, err
	}
	return c.Imm, nil
}

func (h *Host) wait(d time.Duration) (Completion, error) {
	select {
	case c := <-h.done:
		return c, nil
	case <-time.After(d):
		return Completion{}, ErrNoReply
	}
}

// Resent counts the packets the host's requester sent again.
func (h *Host) Resent() int { return h.req.Resent }

// BadICRC counts the ACKs the host's requester dropped for their ICRC.
func (h *Host) BadICRC() int { return h.req.BadICRC }

// Resent counts the packets the NAA's requester sent again, asked of its
// worker between jobs.
func (n *NAA) Resent() int {
	c := make(chan int, 1)
	select {
	case n.jobs <- func() { c <- n.req.Resent }:
		return <-c
	case <-n.stop:
		return 0
	}
}

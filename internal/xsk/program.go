package xsk

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

const (
	xdpPass = 2 // XDP_PASS
	// rxQueueIndex is struct xdp_md's rx_queue_index.
	rxQueueIndex = 16
)

// redirect is the XDP program of a socket: frames up to maxLen bytes
// (all of a multi-buffer frame's fragments counted) go to the socket the
// XSKMAP holds for their queue, or to the kernel when it holds none;
// longer ones go to the kernel, counted in long (a per-CPU array of one
// counter). It is loaded for fragments (BPF_F_XDP_HAS_FRAGS), so that it
// attaches to an interface whose MTU exceeds a page.
func redirect(sockets, long *ebpf.Map, maxLen int) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:    "nsc_xsk",
		Type:    ebpf.XDP,
		License: "GPL",
		Flags:   unix.BPF_F_XDP_HAS_FRAGS,
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnXdpGetBuffLen.Call(),
			asm.JGT.Imm(asm.R0, int32(maxLen), "long"),
			asm.LoadMem(asm.R2, asm.R6, rxQueueIndex, asm.Word),
			asm.LoadMapPtr(asm.R1, sockets.FD()),
			asm.Mov.Imm(asm.R3, xdpPass), // the action when the queue has no socket
			asm.FnRedirectMap.Call(),
			asm.Return(),

			asm.StoreImm(asm.R10, -4, 0, asm.Word).WithSymbol("long"),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, long.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "pass"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
			asm.Return(),
		},
	})
}

// maps makes the program's XSKMAP, with room for queues up to queue, and
// its counter of long frames.
func maps(queue int) (sockets, long *ebpf.Map, err error) {
	sockets, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsc_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queue + 1)})
	if err != nil {
		return nil, nil, err
	}
	long, err = ebpf.NewMap(&ebpf.MapSpec{Name: "nsc_xsk_long", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		sockets.Close()
		return nil, nil, err
	}
	return sockets, long, nil
}

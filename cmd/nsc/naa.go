package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/dragonet-go/nsc/rdma"
)

// Function codes of nsc naa's stand-in kernels (what an FPGA's kernel
// sockets would run).
const (
	naaReverse = 1 // the input, bytes reversed
	naaSum     = 2 // the sum of the input's bytes, 8 bytes big-endian
)

// runNAA moves a buffer and a function code to an NAA on loopback and
// the result back, as NAAICE's HPC node does: the memory regions set up
// by MRSP, the input as WRITEs and a last WRITE with Immediate, the result
// written back with its status as the immediate; then the error paths.
func runNAA(e *env, args []string) error {
	fs := newFlags("naa", e)
	size := fs.Int("size", 64<<20, "bytes of input (at most 2 GiB, NAAICE's largest region)")
	calls := fs.Int("calls", 3, "function calls to time")
	irn := fs.Bool("irn", false, "IRN's responder and selective repeat instead of go-back-N")
	loss := fs.Int("loss", 0, "lose every N-th packet each side sends (0: none)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("unexpected arguments %v", rest)
	case *size < 8 || *size > rdma.MaxRegionSize:
		return usagef("--size %d: must be 8 to %d", *size, rdma.MaxRegionSize)
	case *calls < 1:
		return usagef("--calls %d: must be at least 1", *calls)
	case *loss < 0:
		return usagef("--loss %d: must not be negative", *loss)
	}
	kernels := map[uint32]rdma.Kernel{
		naaReverse: func(in []byte) ([]byte, uint32) {
			out := slices.Clone(in)
			slices.Reverse(out)
			return out, rdma.StatusOK
		},
		naaSum: func(in []byte) ([]byte, uint32) {
			return binary.BigEndian.AppendUint64(nil, byteSum(in)), rdma.StatusOK
		},
	}
	host, naa, stop, err := rdma.Loopback(rdma.Config{Memory: 2 * *size, Kernels: kernels, Timeout: 10 * time.Second, IRN: *irn, Loss: *loss}, *size)
	if err != nil {
		return err
	}
	defer stop()
	const wait = time.Minute
	mrs, err := host.Setup([]uint64{0}, wait)
	if err != nil {
		return fmt.Errorf("MRSP: %w", err)
	}
	in := mrs[0]
	fmt.Fprintf(e.stdout, "MRSP: the NAA registered %d bytes at FPGA address %#x, R_Key %#x\n", in.Size, in.Addr, in.RKey)
	input := make([]byte, *size)
	for i := range input {
		input[i] = byte(i*7 + i>>11)
	}
	want := slices.Clone(input)
	slices.Reverse(want)
	start := time.Now()
	for i := range *calls {
		status, err := host.Call(naaReverse, input, in, wait)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		if status != rdma.StatusOK || !bytes.Equal(host.Regions[0].Mem, want) {
			return fmt.Errorf("call %d: status %#x, the result is the input reversed: %v", i, status, bytes.Equal(host.Regions[0].Mem, want))
		}
	}
	d := time.Since(start).Seconds()
	msgs := *calls * ((*size+rdma.MessageSize-1)/rdma.MessageSize + 1) // the input's messages, and the result
	fmt.Fprintf(e.stdout, "reverse: %d calls of %d bytes there and back in %.2f s: %.1f messages/s, %.2f Gbps, status 0, result right\n",
		*calls, *size, d, float64(msgs)/d, float64(2**calls**size)*8/d/1e9)
	if status, err := host.Call(naaSum, input[:8], in, wait); err != nil || status != rdma.StatusOK || binary.BigEndian.Uint64(host.Regions[0].Mem) != byteSum(input) {
		return fmt.Errorf("sum: status %#x, %v", status, err)
	}
	fmt.Fprintf(e.stdout, "sum: %#x, status 0\n", byteSum(input))
	status, err := host.Call(0x7f, input[:8], in, wait)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "function 0x7f (no kernel): status %#x\n", status)
	_, err = host.Setup(make([]uint64, rdma.MaxRegions+1), wait)
	fmt.Fprintf(e.stdout, "MRSP request of %d regions: %v\n", rdma.MaxRegions+1, err)
	_, err = host.Setup([]uint64{uint64(4 * *size)}, wait)
	fmt.Fprintf(e.stdout, "MRSP request past the FPGA's memory: %v\n", err)
	fmt.Fprintf(e.stdout, "packets sent again: host %d, NAA %d\n", host.Resent(), naa.Resent())
	return nil
}

func byteSum(b []byte) uint64 {
	var s uint64
	for _, x := range b {
		s += uint64(x)
	}
	return s
}

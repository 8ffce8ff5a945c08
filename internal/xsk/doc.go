// Package xsk is an AF_XDP socket on one queue of a Linux network
// interface, in copy mode (XDP_COPY: veth and most drivers' generic path
// have no zero-copy), with the XDP program that hands it the queue's
// frames.
//
// Open registers a UMEM of Config.Frames chunks of FrameSize bytes, maps
// its four rings (fill, completion, rx, tx), binds the socket and attaches
// a redirect program built in Go (cilium/ebpf/asm: nothing to compile at
// run time). The program sends every frame of the queue to the socket
// (bpf_redirect_map on an XSKMAP, with XDP_PASS as the fallback when the
// queue has no socket), except a frame longer than MaxLen, which a chunk
// cannot hold with the room the caller keeps around it: that one goes to
// the kernel's stack untouched and is counted (Socket.Long). Everything
// is redirected, ARP and ICMP too: an application on the socket (the
// EJFAT LB, whose models answer ARP, ICMP and ND for the LB's addresses)
// owns the queue, as an XDP program would.
//
// One goroutine drives a socket: Receive takes frames off the rx ring,
// Transmit puts a frame (changed in place in its chunk) on the tx ring,
// Recycle gives a frame back to the kernel for receiving, and Flush
// publishes what was queued, has the kernel send it (a sendto per 32
// frames: copy mode sends in the system call) and returns sent frames to
// the fill ring. Every chunk is always in exactly one place (a ring, the
// kernel, or the caller between Receive and Transmit or Recycle), so the
// fill ring, as large as the UMEM, never overflows and nothing allocates
// per frame. The rings' producer and consumer indices are shared with the
// kernel and read and written with atomic loads and stores, as its ABI
// asks. Close detaches the program and unmaps and closes everything, as
// Open does when it fails half way.
package xsk

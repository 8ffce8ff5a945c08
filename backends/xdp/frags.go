package xdp

import "fmt"

// Frames longer than one buffer: the program is loaded for multi-buffer
// XDP (section xdp.frags, BPF_F_XDP_HAS_FRAGS), so a jumbo frame arrives
// as a linear head (about a page, whatever the driver or
// BPF_PROG_TEST_RUN puts there) and fragments. The frame's length is
// bpf_xdp_get_buff_len's; headers are read and written in the head
// directly, as in a one-buffer frame; a checksum's range that runs into
// the fragments is summed through bpf_xdp_load_bytes; pops and pushes
// move the head (bpf_xdp_adjust_head works on the head of a multi-buffer
// frame).

// reasonBeyondHead drops a frame whose header lies inside the frame but
// past its linear head, where the program cannot point at it. Drivers
// put their first receive buffer (2 KiB and more) in the head, generic
// XDP and BPF_PROG_TEST_RUN up to 3,520 bytes: protocol headers are there.
const reasonBeyondHead = "header beyond the XDP head"

// beyondHead is the statement that drops a frame at the node being
// generated because a header it reaches lies past the linear head.
func (c *gen) beyondHead() string { return c.dropStmt(c.node.ID, c.mal, reasonBeyondHead) }

// inHead is the statement that checks that the n bytes at pointer p
// (offset off of the frame) are in the head: past the frame's end the
// frame is malformed, inside it but past the head it is dropped as beyond
// the head.
func (c *gen) inHead(p, off string, n int) string {
	return fmt.Sprintf("if ((void *)(%s + %d) > data_end) { if (%s + %d <= NSC_LEN) %s %s }", p, n, off, n, c.beyondHead(), c.malformed())
}

// chunkC is the per-CPU buffer that bytes outside the head are read into
// (bpf_xdp_load_bytes) by nsc_sum_frags and nsc_icrc_bad (icrc.go).
const chunkC = `#define NSC_CHUNK 512
struct nsc_chunk { unsigned char b[NSC_CHUNK]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nsc_chunk);
} nsc_chunk SEC(".maps");
`

// sumFragsC sums a range that does not lie in the head, through the chunk
// buffer: whole chunks, then the rest in pieces of 256, 128, … 4, 2 and 1
// bytes. Every size is a constant (a size the verifier had to follow
// through a loop's bound made it walk every chunk length) and every piece
// but the last two starts a multiple of 4 bytes from start, so big-endian
// 32-bit words sum as the 16-bit ones do; a last odd byte is a high byte.
const sumFragsC = `
#define NSC_SUM_PIECE(size) \
	if (r & (size)) { \
		if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, (size))) \
			return 0; \
		for (__u32 j = 0; j < (size); j += 4) \
			acc += bpf_ntohl(*(__u32 *)(buf->b + j)); \
		pos += (size); \
	}

__attribute__((noinline)) __u64 nsc_sum_frags(struct xdp_md *ctx, __u32 start, __u32 n)
{
	__u32 zero = 0;
	struct nsc_chunk *buf = bpf_map_lookup_elem(&nsc_chunk, &zero);
	if (!ctx || !buf)
		return 0;
	__u64 acc = 0;
	start &= NSC_OM;
	n &= NSC_OM;
	__u32 full = n / NSC_CHUNK, r = n % NSC_CHUNK;
	for (__u32 k = 0; k < (NSC_OM + 1) / NSC_CHUNK; k++) {
		if (k >= full)
			break;
		if (bpf_xdp_load_bytes(ctx, (start + k * NSC_CHUNK) & NSC_OM, buf->b, NSC_CHUNK))
			return 0;
		for (__u32 j = 0; j < NSC_CHUNK; j += 4)
			acc += bpf_ntohl(*(__u32 *)(buf->b + j));
	}
	__u32 pos = start + full * NSC_CHUNK;
	NSC_SUM_PIECE(256)
	NSC_SUM_PIECE(128)
	NSC_SUM_PIECE(64)
	NSC_SUM_PIECE(32)
	NSC_SUM_PIECE(16)
	NSC_SUM_PIECE(8)
	NSC_SUM_PIECE(4)
	if (r & 2) {
		if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, 2))
			return 0;
		acc += ((__u32)buf->b[0] << 8) | buf->b[1];
		pos += 2;
	}
	if (r & 1) {
		if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, 1))
			return 0;
		acc += (__u32)buf->b[0] << 8;
	}
	return acc;
}
`

package xdp

import (
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/dragonet-go/nsc/backends/lower"
	"github.com/dragonet-go/nsc/packet"
)

// The RoCEv2 ICRC (packet.ICRC): zlib's CRC-32 over 8 bytes of 0xff, the
// IP header, UDP, the BTH and the rest of the IP payload but its last 4
// bytes (the ICRC, least significant byte first), with the fields a
// router may change read as ones. Every masked byte lies in the first
// bytes, from the IP header to the BTH's fifth, so nsc_icrc_bad loads
// those into the chunk buffer and masks them there, then runs the CRC
// over the rest chunk by chunk as nsc_sum_frags sums (constant sizes for
// the verifier), 4 bytes a step by slicing (four tables: zlib's, printed
// from hash/crc32, and the CRC of a byte followed by 1, 2, 3 zero bytes),
// the header bytes and the last 2 of an odd length one by one.
func icrcC() string {
	var tab [4][256]uint32
	tab[0] = *crc32.IEEETable
	for k := 1; k < 4; k++ {
		for i, v := range tab[k-1] {
			tab[k][i] = v>>8 ^ tab[0][v&0xff]
		}
	}
	var t strings.Builder
	for k := range tab {
		t.WriteString("\n\t{")
		for i, v := range tab[k] {
			if i%6 == 0 {
				t.WriteString("\n\t\t")
			} else {
				t.WriteByte(' ')
			}
			fmt.Fprintf(&t, "0x%08x,", v)
		}
		t.WriteString("\n\t},")
	}
	return `static const __u32 nsc_crc32[4][256] = {` + t.String() + `
};
#define NSC_CRC(c, b) (nsc_crc32[0][((c) ^ (b)) & 0xff] ^ ((c) >> 8))
/* Four bytes at p, the first the least significant. */
#define NSC_CRC4(c, p) ({ \
	__u32 x = (c) ^ ((__u32)(p)[0] | (__u32)(p)[1] << 8 | (__u32)(p)[2] << 16 | (__u32)(p)[3] << 24); \
	nsc_crc32[3][x & 0xff] ^ nsc_crc32[2][(x >> 8) & 0xff] ^ nsc_crc32[1][(x >> 16) & 0xff] ^ nsc_crc32[0][x >> 24]; \
})
#define NSC_CRC_PIECE(size) \
	if (r & (size)) { \
		if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, (size))) \
			return 1; \
		if ((size) >= 4) \
			for (__u32 j = 0; j < (size); j += 4) \
				c = NSC_CRC4(c, buf->b + j); \
		else \
			for (__u32 j = 0; j < (size); j++) \
				c = NSC_CRC(c, buf->b[j]); \
		pos += (size); \
	}

/* nsc_icrc_bad is 0 when the ICRC of the frame whose IP header (IPv6 if
 * v6) starts at ip, its BTH at bth and its IP payload ends at end is
 * right (the caller checked the offsets as packet.icrcRegion does). */
__attribute__((noinline)) int nsc_icrc_bad(struct xdp_md *ctx, __u32 ip, __u32 bth, __u32 end, int v6)
{
	__u32 zero = 0;
	struct nsc_chunk *buf = bpf_map_lookup_elem(&nsc_chunk, &zero);
	if (!ctx || !buf)
		return 1;
	ip &= NSC_OM;
	bth &= NSC_OM;
	end &= NSC_OM;
	if (bth < ip + 28 || end < bth + 9)
		return 1;
	/* h: the IP header (20 to 60 bytes; IPv6 40), UDP, 5 bytes of the
	 * BTH; bounded on the register the helper gets, for the verifier. */
	__u32 h = bth + 5 - ip, c = 0xffffffff;
	if (h < 33 || h > 73 || bpf_xdp_load_bytes(ctx, ip, buf->b, h))
		return 1;
	for (int j = 0; j < 8; j++) /* the LRH */
		c = NSC_CRC(c, 0xff);
	if (v6) { /* traffic class, flow label, hop limit */
		buf->b[0] |= 0x0f;
		buf->b[1] = buf->b[2] = buf->b[3] = buf->b[7] = 0xff;
	} else { /* TOS, TTL, header checksum */
		buf->b[1] = buf->b[8] = buf->b[10] = buf->b[11] = 0xff;
	}
	buf->b[(h - 7) & 127] = buf->b[(h - 6) & 127] = 0xff; /* UDP checksum */
	buf->b[(h - 1) & 127] = 0xff;                        /* FECN, BECN, resv6 */
	for (__u32 j = 0; j < 128; j++) {
		if (j >= h)
			break;
		c = NSC_CRC(c, buf->b[j]);
	}
	__u32 pos = bth + 5, n = (end - 4 - pos) & NSC_OM;
	__u32 full = n / NSC_CHUNK, r = n % NSC_CHUNK;
	for (__u32 k = 0; k < (NSC_OM + 1) / NSC_CHUNK; k++) {
		if (k >= full)
			break;
		if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, NSC_CHUNK))
			return 1;
		for (__u32 j = 0; j < NSC_CHUNK; j += 4)
			c = NSC_CRC4(c, buf->b + j);
		pos += NSC_CHUNK;
	}
	NSC_CRC_PIECE(256)
	NSC_CRC_PIECE(128)
	NSC_CRC_PIECE(64)
	NSC_CRC_PIECE(32)
	NSC_CRC_PIECE(16)
	NSC_CRC_PIECE(8)
	NSC_CRC_PIECE(4)
	NSC_CRC_PIECE(2)
	NSC_CRC_PIECE(1)
	if (bpf_xdp_load_bytes(ctx, pos & NSC_OM, buf->b, 4))
		return 1;
	__u32 want = buf->b[0] | (__u32)buf->b[1] << 8 | (__u32)buf->b[2] << 16 | (__u32)buf->b[3] << 24;
	return ~c != want;
}
`
}

// C verifies the ICRC; it computes none, and keeps no registers: a
// device that keeps none leaves them, the ICRC's computation and cut, and
// the replies built after them, to the host (models/rdma/xdp.nsc), so the
// walker refuses them.
var _ lower.ICRCVerifier = (*gen)(nil)

// VerifyICRC generates `checksum verify icrc H` as a condition: the
// offsets packet.icrcRegion checks (an IP header right before UDP and H,
// H inside the IP payload, the payload inside the frame), then
// nsc_icrc_bad. A frame whose offsets do not hold fails the check, as in
// the Go runtime.
func (c *gen) VerifyICRC(x *lower.ICRC) string {
	h := x.H
	c.usesICRC = true
	r := c.newTmp("icrc")
	c.emit("int %s = 0;", r)
	c.emit("if (%s && st->len[%d] >= 5) {", c.valid(h), h)
	c.emit("__u32 bth = st->off[%d], ip = 0, e = 0; int ok = 0, v6 = 0;", h)
	for _, ip := range x.IPs {
		c.emit("if (%s && st->off[%d] < bth) {", c.valid(ip.H), ip.H)
		c.emit("ip = st->off[%d] & NSC_OM;", ip.H)
		c.emit("unsigned char *ib = (unsigned char *)data + ip; NSC_HIDE(ib);")
		c.emit("if ((void *)(ib + %d) > data_end) %s", c.s.Headers[ip.H].FixedBytes(), c.beyondHead())
		if ip.V6 {
			c.emit("e = ip + 40 + %s; v6 = 1;", getField(c.s, "ib", ip.H, ip.Length))
			c.emit("ok = st->len[%d] == 40 && ip + 48 == bth;", ip.H)
		} else {
			c.emit("e = ip + %s;", getField(c.s, "ib", ip.H, ip.Length))
			c.emit("ok = st->len[%d] >= 20 && ip + st->len[%d] + 8 == bth;", ip.H, ip.H)
		}
		c.emit("} else")
	}
	c.emit("{}")
	c.emit("if (ok && bth + st->len[%d] + %d <= e && e <= NSC_LEN)", h, packet.ICRCLen)
	c.emit("%s = !nsc_icrc_bad(ctx, ip, bth, e, v6);", r)
	c.emit("}")
	return r
}

package xdp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// runtimeC is the part of every program that does not depend on the
// graph: 128-bit arithmetic, checksum arithmetic, frame moves.
const runtimeC = `#define NSC_INLINE static __always_inline __attribute__((unused))

/* 128-bit values: two words. */
typedef struct { __u64 hi, lo; } nsc_v128;

NSC_INLINE nsc_v128 nsc_v(__u64 hi, __u64 lo) { nsc_v128 r = {hi, lo}; return r; }
NSC_INLINE nsc_v128 nsc_vand(nsc_v128 a, nsc_v128 b) { return nsc_v(a.hi & b.hi, a.lo & b.lo); }
NSC_INLINE nsc_v128 nsc_vor(nsc_v128 a, nsc_v128 b) { return nsc_v(a.hi | b.hi, a.lo | b.lo); }
NSC_INLINE nsc_v128 nsc_vxor(nsc_v128 a, nsc_v128 b) { return nsc_v(a.hi ^ b.hi, a.lo ^ b.lo); }
NSC_INLINE nsc_v128 nsc_vnot(nsc_v128 a) { return nsc_v(~a.hi, ~a.lo); }
NSC_INLINE int nsc_vzero(nsc_v128 a) { return (a.hi | a.lo) == 0; }
NSC_INLINE int nsc_veq(nsc_v128 a, nsc_v128 b) { return a.hi == b.hi && a.lo == b.lo; }
NSC_INLINE int nsc_vcmp(nsc_v128 a, nsc_v128 b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	if (a.lo != b.lo)
		return a.lo < b.lo ? -1 : 1;
	return 0;
}
NSC_INLINE nsc_v128 nsc_vadd(nsc_v128 a, nsc_v128 b)
{
	__u64 lo = a.lo + b.lo;
	return nsc_v(a.hi + b.hi + (lo < a.lo), lo);
}
NSC_INLINE nsc_v128 nsc_vsub(nsc_v128 a, nsc_v128 b)
{
	return nsc_v(a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo);
}
NSC_INLINE __u64 nsc_mulhi(__u64 a, __u64 b)
{
	__u64 a0 = a & 0xffffffff, a1 = a >> 32, b0 = b & 0xffffffff, b1 = b >> 32;
	__u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	__u64 mid = (p00 >> 32) + (p01 & 0xffffffff) + (p10 & 0xffffffff);
	return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
NSC_INLINE nsc_v128 nsc_vmul(nsc_v128 a, nsc_v128 b)
{
	return nsc_v(nsc_mulhi(a.lo, b.lo) + a.hi * b.lo + a.lo * b.hi, a.lo * b.lo);
}
/* Shifts by any amount: 128 and more give 0 (packet.Value's Shl, Shr). */
NSC_INLINE nsc_v128 nsc_vshl(nsc_v128 a, __u64 n)
{
	if (n >= 128)
		return nsc_v(0, 0);
	if (n >= 64)
		return nsc_v(a.lo << (n - 64), 0);
	if (n == 0)
		return a;
	return nsc_v(a.hi << n | a.lo >> (64 - n), a.lo << n);
}
NSC_INLINE nsc_v128 nsc_vshr(nsc_v128 a, __u64 n)
{
	if (n >= 128)
		return nsc_v(0, 0);
	if (n >= 64)
		return nsc_v(0, a.hi >> (n - 64));
	if (n == 0)
		return a;
	return nsc_v(a.hi >> n, a.lo >> n | a.hi << (64 - n));
}
/* The shift count is the low word, as the interpreter takes it. */
NSC_INLINE nsc_v128 nsc_vshlv(nsc_v128 a, nsc_v128 n) { return nsc_vshl(a, n.lo); }
NSC_INLINE nsc_v128 nsc_vshrv(nsc_v128 a, nsc_v128 n) { return nsc_vshr(a, n.lo); }
NSC_INLINE __u64 nsc_shl64(__u64 a, __u64 n) { return n >= 64 ? 0 : a << n; }
NSC_INLINE __u64 nsc_shr64(__u64 a, __u64 n) { return n >= 64 ? 0 : a >> n; }

/* The frame's length: a 64-bit difference of the pointers (clang must not
 * narrow the pointers themselves, which the verifier refuses). */
NSC_INLINE __u32 nsc_len(void *data, void *data_end)
{
	__u64 l = (long)data_end - (long)data;
	asm volatile("" : "+r"(l));
	return (__u32)l;
}

/* One's-complement arithmetic (packet/checksum.go). */
NSC_INLINE __u16 nsc_fold(__u64 x)
{
	x = (x >> 32) + (x & 0xffffffff);
	x = (x >> 32) + (x & 0xffffffff);
	x = (x >> 16) + (x & 0xffff);
	x = (x >> 16) + (x & 0xffff);
	x = (x >> 16) + (x & 0xffff);
	return (__u16)x;
}
/* packet.ApplyChecksumDelta */
NSC_INLINE __u16 nsc_apply(__u16 c, __u64 d, int optional)
{
	if (optional && c == 0)
		return 0;
	__u16 r = ~nsc_fold((__u64)(__u16)~c + d);
	if (optional && r == 0)
		r = 0xffff;
	return r;
}
`

const sumC = sumFragsC + `
/* The sum of the 16-bit words of the frame's bytes [start, end), an odd
 * last byte as a high byte (packet.Sum, not folded). Big-endian 32-bit
 * words sum to the same value mod 0xffff, and to zero only when the
 * 16-bit words do, so nsc_fold gives packet.Sum's result. Read in place
 * when the range lies in the head, through nsc_sum_frags otherwise. */
#define NSC_HEADSUM 4096
__attribute__((noinline)) __u64 nsc_sum(struct xdp_md *ctx, __u32 start, __u32 end)
{
	if (!ctx)
		return 0;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u64 acc = 0;
	start &= NSC_OM;
	end &= NSC_OM;
	if (end <= start)
		return 0;
	__u32 n = end - start, i = 0;
	if (end > nsc_len(data, data_end) || n > NSC_HEADSUM)
		return nsc_sum_frags(ctx, start, n);
	for (; i < NSC_HEADSUM; i += 4) {
		if (i + 4 > n)
			break;
		unsigned char *p = (unsigned char *)data + ((start + i) & NSC_OM);
		if ((void *)(p + 4) > data_end)
			break;
		acc += bpf_ntohl(*(__u32 *)p);
	}
	unsigned char *p = (unsigned char *)data + ((start + i) & NSC_OM);
	if (i + 2 <= n && (void *)(p + 2) <= data_end) {
		acc += ((__u32)p[0] << 8) | p[1];
		i += 2;
		p += 2;
	}
	if (i < n && (void *)(p + 1) <= data_end)
		acc += (__u32)p[0] << 8;
	return acc;
}
`

const popSumC = `/* packet.PopDelta over the frame's bytes [off, off+n), n even: every
 * word's complement. A popped header lies in the head, at most a page
 * (a bound of NSC_MAXFRAME, 8,128 turns, made the 6.18 verifier fail
 * with EFAULT on some programs). */
__attribute__((noinline)) __u64 nsc_popdelta(struct xdp_md *ctx, __u32 off, __u32 n)
{
	if (!ctx)
		return 0;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u64 d = 0;
	off &= NSC_OM;
	n &= NSC_OM;
	for (__u32 i = 0; i < 4096; i += 2) {
		if (i + 2 > n)
			break;
		unsigned char *p = (unsigned char *)data + ((off + i) & NSC_OM);
		if ((void *)(p + 2) > data_end)
			break;
		d += 0xffff - (((__u32)p[0] << 8) | p[1]);
	}
	return d;
}
`

var moveC = `/* Scratch for moving the bytes in front of a pushed or popped header. */
struct nsc_buf { unsigned char b[NSC_OM + 1]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nsc_buf);
} nsc_buf SEC(".maps");

` + fwd64C() + `/* The bytes [n, n+off) move back to [0, off), off at most 64 (push). */
NSC_INLINE int nsc_back64(void *data, void *data_end, __u32 off, __u32 n)
{
	__u32 i = 0;
	off &= 127;
	for (int k = 0; k < 8; k++) {
		if (i + 8 > off)
			break;
		unsigned char *s = (unsigned char *)data + ((i + n) & NSC_OM);
		unsigned char *t = (unsigned char *)data + (i & 63);
		NSC_HIDE(s);
		NSC_HIDE(t);
		if ((void *)(s + 8) > data_end || (void *)(t + 8) > data_end)
			return -1;
		*(__u64 *)t = *(__u64 *)s;
		i += 8;
	}
	for (int k = 0; k < 7; k++) {
		if (i >= off)
			break;
		unsigned char *s = (unsigned char *)data + ((i + n) & NSC_OM);
		unsigned char *t = (unsigned char *)data + (i & 63);
		NSC_HIDE(s);
		NSC_HIDE(t);
		if ((void *)(s + 1) > data_end || (void *)(t + 1) > data_end)
			return -1;
		*t = *s;
		i++;
	}
	return 0;
}

/* pop: the bytes [0, off) move forward by n over the popped header, then
 * the head follows. Fails, changing nothing, when less than an Ethernet
 * header would be left (bpf_xdp_adjust_head refuses that). */
__attribute__((noinline)) int nsc_pop_move(struct xdp_md *ctx, __u32 off, __u32 n)
{
	if (!ctx)
		return -1;
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u32 len = nsc_len(data, data_end);
	__u32 zero = 0;
	struct nsc_buf *buf = bpf_map_lookup_elem(&nsc_buf, &zero);
	if (!buf)
		return -1;
	off &= NSC_OM;
	n &= NSC_OM;
	if (off + n > len || len - n < 14)
		return -1;
	if (off > 0) {
		if (bpf_xdp_load_bytes(ctx, 0, buf->b, off))
			return -1;
		if (bpf_xdp_store_bytes(ctx, n, buf->b, off))
			return -1;
	}
	return bpf_xdp_adjust_head(ctx, (int)n) ? -1 : 0;
}

/* push: the head moves back by n, the bytes in front of off with it, and
 * the n bytes at off become zeros. */
__attribute__((noinline)) int nsc_push_move(struct xdp_md *ctx, __u32 off, __u32 n)
{
	if (!ctx)
		return -1;
	__u32 zero = 0;
	struct nsc_buf *buf = bpf_map_lookup_elem(&nsc_buf, &zero);
	if (!buf)
		return -1;
	n &= 0xff;
	off &= NSC_OM;
	if (n == 0)
		return 0;
	if (bpf_xdp_adjust_head(ctx, -(int)n))
		return -1;
	if (off > 0) {
		if (bpf_xdp_load_bytes(ctx, n, buf->b, off))
			return -1;
		if (bpf_xdp_store_bytes(ctx, 0, buf->b, off))
			return -1;
	}
	__builtin_memset(buf->b, 0, 256);
	if (bpf_xdp_store_bytes(ctx, off, buf->b, n))
		return -1;
	return 0;
}
`

// file assembles the program's source.
func (c *gen) file(opt Options) (*Program, error) {
	meta := c.meta()
	var w bytes.Buffer
	w.WriteString("// Code generated by nsc compile --target xdp; DO NOT EDIT.\n")
	if opt.Command != "" {
		fmt.Fprintf(&w, "// To regenerate: %s\n", opt.Command)
	}
	fmt.Fprintf(&w, "//\n// The XDP program of graph %s: every frame runs through the graph's\n// nodes as the interpreter (nsc's sim package) runs them, counters\n// included. Build: clang -O2 -g -target bpf -c.\n\n", cComment(c.g.Name))
	w.WriteString("#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n#include <bpf/bpf_endian.h>\n\n")
	w.WriteString("char LICENSE[] SEC(\"license\") = \"Dual BSD/GPL\";\n\n")
	fmt.Fprintf(&w, "#define NSC_MAXFRAME %d\n#define NSC_OM 0x3fff /* offsets are below NSC_MAXFRAME + pushes */\n", MaxFrame)
	w.WriteString("/* Hides a packet pointer from clang, so that it cannot rebuild it from\n * its offset where the verifier would not see the bounds check. */\n#define NSC_HIDE(p) asm volatile(\"\" : \"+r\"(p))\n\n")
	w.WriteString(runtimeC)
	w.WriteString("\n")

	// Counters.
	fmt.Fprintf(&w, "/* Counters: flow edges (%d; node runs follow from them, Meta.Flow), sinks (%d), drops (%d), oversize frames (1). */\n",
		meta.NumEdges, len(meta.Sinks), len(meta.Drops))
	fmt.Fprintf(&w, "#define NSC_EDGE(i) (cnt->c[(i)]++)\n#define NSC_SINK(i, v) do { cnt->c[%d + (i)]++; return (v); } while (0)\n#define NSC_DROP(i) do { cnt->c[%d + (i)]++; return XDP_DROP; } while (0)\n#define NSC_OVERSIZE %d\n\n",
		meta.SinkBase(), meta.DropBase(), meta.Oversize())

	// Per-frame state.
	w.WriteString("/* The frame's state: valid headers, their offsets and lengths, the\n * parse cursor, metadata (a field wider than 64 bits takes two words,\n * the high one first). */\n")
	fmt.Fprintf(&w, "struct nsc_state {\n\t__u64 valid[%d];\n\t__u16 off[%d];\n\t__u16 len[%d];\n\t__u32 cursor;\n\t__u64 m[%d];\n};\n", c.validWords, max(1, len(c.s.Headers)), max(1, len(c.s.Headers)), max(1, c.metaWords))
	fmt.Fprintf(&w, "/* Per CPU: the counters, then the frame's state (one lookup per frame). */\nstruct nsc_cpu {\n\t__u64 c[%d];\n\tstruct nsc_state st;\n\tunsigned char spare[%d];\n};\n", meta.NumCounters, c.maxFixed())
	w.WriteString("struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct nsc_cpu);\n} nsc_counters SEC(\".maps\");\n\n")
	w.WriteString("#define NSC_VALID(h) ((st->valid[(h) / 64] >> ((h) % 64)) & 1)\n#define NSC_SETV(h) (st->valid[(h) / 64] |= 1ULL << ((h) % 64))\n#define NSC_CLRV(h) (st->valid[(h) / 64] &= ~(1ULL << ((h) % 64)))\n#define NSC_LEN flen\n\n")

	// Tables.
	fmt.Fprintf(&w, "/* Entries per table (scanned tables). */\nstruct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, __u32);\n} nsc_lens SEC(\".maps\");\n\n", max(1, len(c.s.Tables)))
	for _, tm := range meta.Tables {
		if !tm.Used {
			continue
		}
		c.tableC(&w, tm.Index)
	}
	if c.usesSum || c.usesICRC {
		w.WriteString(chunkC)
	}
	if c.usesSum {
		w.WriteString(sumC + "\n")
	}
	if c.usesICRC {
		w.WriteString(icrcC() + "\n")
	}
	if c.usesPopSum {
		w.WriteString(popSumC + "\n")
	}
	if c.usesMove {
		w.WriteString(moveC + "\n")
	}

	// The program.
	fmt.Fprintf(&w, "SEC(\"xdp.frags\")\nint %s(struct xdp_md *ctx)\n{\n", FuncName)
	w.WriteString("\t__u32 zero = 0;\n\tstruct nsc_cpu *cnt = bpf_map_lookup_elem(&nsc_counters, &zero);\n\tif (!cnt)\n\t\treturn XDP_ABORTED;\n\tstruct nsc_state *st = &cnt->st;\n")
	w.WriteString("\tvoid *data = (void *)(long)ctx->data;\n\tvoid *data_end = (void *)(long)ctx->data_end;\n\t__u32 flen = bpf_xdp_get_buff_len(ctx); /* the head and the fragments */\n")
	var hps []int
	for h := range c.hpUsed {
		hps = append(hps, h)
	}
	sort.Ints(hps)
	for _, h := range hps {
		// Until a header is found its pointer points at spare bytes: the
		// code reads it only where the header is valid, which the
		// verifier cannot know, so every path must be safe.
		fmt.Fprintf(&w, "\tunsigned char *hp%d = cnt->spare; /* %s */\n", h, cComment(c.s.Headers[h].Name))
	}
	if len(c.w.Pops.Defers) > 0 {
		w.WriteString("\t__u32 pend_off = 0, pend_n = 0; /* bytes a pop left for the next pop to move */\n")
	}
	for _, u := range c.w.Pops.Pending {
		fmt.Fprintf(&w, "\t__u64 pend_d%d = 0; int pend_k%d = 0; /* %s checksum: a patch left for after a pop's move */\n", u, u, cComment(c.s.Headers[u].Name))
	}
	// A frame longer than MaxFrame goes to the kernel.
	w.WriteString("\tif (NSC_LEN > NSC_MAXFRAME) {\n\t\tcnt->c[NSC_OVERSIZE]++;\n\t\treturn XDP_PASS;\n\t}\n")
	for i := 0; i < c.validWords; i++ {
		fmt.Fprintf(&w, "\tst->valid[%d] = 0;\n", i)
	}
	w.WriteString("\tst->cursor = 0;\n")
	for i := 0; i < c.metaWords; i++ {
		fmt.Fprintf(&w, "\tst->m[%d] = 0;\n", i)
	}
	w.Write(c.b.Bytes())
	w.WriteString("}\n\n")

	js, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("xdp backend: %v", err)
	}
	w.WriteString("/* The program's description for nsc xdp (backends/xdp.Meta). */\n")
	fmt.Fprintf(&w, "__attribute__((section(%q), used)) static const char nsc_meta[] =\n", xdprun.MetaSection)
	for len(js) > 0 {
		n := min(len(js), 100)
		fmt.Fprintf(&w, "\t%s\n", cString(js[:n]))
		js = js[n:]
	}
	w.WriteString(";\n")
	return &Program{C: w.Bytes(), Meta: meta}, nil
}

// cString quotes b as a C string literal (octal escapes for anything not
// plainly printable).
func cString(b []byte) string {
	var s strings.Builder
	s.WriteByte('"')
	for _, x := range b {
		switch {
		case x == '"' || x == '\\':
			s.WriteByte('\\')
			s.WriteByte(x)
		case x >= 0x20 && x < 0x7f && x != '?':
			s.WriteByte(x)
		default:
			fmt.Fprintf(&s, "\\%03o", x)
		}
	}
	s.WriteByte('"')
	return s.String()
}

// meta is the program's description.
func (c *gen) meta() *xdprun.Meta {
	m := &xdprun.Meta{Version: xdprun.MetaVersion, Graph: c.g.Name, Program: FuncName, Counters: "nsc_counters", Lens: "nsc_lens", MaxFrame: MaxFrame,
		NumEdges: c.edgeCounters, Flow: c.flow, Sinks: c.sinks, Counts: c.w.Counts.List}
	for _, n := range c.g.Nodes {
		m.Nodes = append(m.Nodes, n.Name)
	}
	for _, d := range c.w.Drops.List {
		m.Drops = append(m.Drops, xdprun.Drop{Node: d.Node, Reason: d.Reason})
	}
	if m.Sinks == nil {
		m.Sinks = []xdprun.Sink{}
	}
	if m.Drops == nil {
		m.Drops = []xdprun.Drop{}
	}
	if m.Counts == nil {
		m.Counts = []string{}
	}
	m.CountNodes = make([][]int, len(m.Counts))
	for i := range m.CountNodes {
		m.CountNodes[i] = []int{}
	}
	for _, n := range c.g.Nodes {
		if n.Kind == dataflow.FNode && n.Op.Kind == packet.OpCount {
			if i, ok := c.w.Counts.Index(n.Op.Label); ok {
				m.CountNodes[i] = append(m.CountNodes[i], int(n.ID))
			}
		}
	}
	for i, t := range c.s.Tables {
		m.Tables = append(m.Tables, xdprun.TableMeta{Index: i, Map: fmt.Sprintf("nsc_t%d", i), Mode: xdprun.LayoutOf(t.Spec).Mode, Spec: t.Spec, Used: c.tableUsed[i]})
	}
	m.NumCounters = m.Oversize() + 1
	return m
}

// tableC declares table t's structs, default entry, map and (scanned
// tables) scan function.
func (c *gen) tableC(w *bytes.Buffer, t int) {
	def := c.s.Tables[t]
	spec := def.Spec
	l := xdprun.LayoutOf(spec)
	size := xdprun.TableSize(spec)
	fmt.Fprintf(w, "/* Table %s (%s): ", cComment(spec.Name), l.Mode)
	var ks []string
	for _, k := range spec.Keys {
		ks = append(ks, fmt.Sprintf("%s %s/%d", cComment(k.Name), k.Kind, k.Width))
	}
	fmt.Fprintf(w, "keys %s; %d entries. */\n", strings.Join(ks, ", "), size)
	fmt.Fprintf(w, "struct nsc_t%d_val {\n\t__u32 action;\n\t__u32 pad;\n\t__u64 p[%d];\n};\n", t, l.ParamWords)
	// The default action and its parameters.
	dv := l.Value(def.Default, def.DefaultParams, spec)
	fmt.Fprintf(w, "static const struct nsc_t%d_val nsc_t%d_def = {%d, 0, {", t, t, def.Default)
	var ps []string
	for i := 0; i < l.ParamWords; i++ {
		ps = append(ps, ulit(nativeWord(dv[8+8*i:])))
	}
	fmt.Fprintf(w, "%s}};\n", strings.Join(ps, ", "))
	switch l.Mode {
	case xdprun.ModeSlots:
		fmt.Fprintf(w, "struct nsc_t%d_slot {\n\t__u64 key; /* the packed keys */\n\t__u32 action;\n\t__u32 used;\n\t__u64 p[%d];\n};\n", t, l.ParamWords)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct nsc_t%d_slot);\n} nsc_t%d SEC(\".maps\");\n\n", l.Slots, t, t)
	case xdprun.ModeHash:
		fmt.Fprintf(w, "struct nsc_t%d_key {\n\t__u64 k[%d];\n};\n", t, l.KeyWords)
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, %d);\n\t__type(key, struct nsc_t%d_key);\n\t__type(value, struct nsc_t%d_val);\n} nsc_t%d SEC(\".maps\");\n\n", size, t, t, t)
	case xdprun.ModeLPM:
		fmt.Fprintf(w, "struct nsc_t%d_key {\n\t__u32 prefixlen;\n\t__u8 data[%d];\n};\n", t, l.LPMPad())
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_LPM_TRIE);\n\t__uint(map_flags, BPF_F_NO_PREALLOC);\n\t__uint(max_entries, %d);\n\t__type(key, struct nsc_t%d_key);\n\t__type(value, struct nsc_t%d_val);\n} nsc_t%d SEC(\".maps\");\n\n", size, t, t, t)
	case xdprun.ModeScan:
		fmt.Fprintf(w, "struct nsc_t%d_ent {\n", t)
		if l.KeyWords > 0 {
			fmt.Fprintf(w, "\t__u64 m[%d]; /* per key: value, mask, low, high */\n", 4*l.KeyWords)
		}
		fmt.Fprintf(w, "\t__u32 action;\n\t__u32 pad;\n\t__u64 p[%d];\n};\n", l.ParamWords)
		fmt.Fprintf(w, "struct nsc_t%d_keys {\n\t__u64 k[%d];\n};\n", t, max(1, l.KeyWords))
		fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct nsc_t%d_ent);\n} nsc_t%d SEC(\".maps\");\n\n", size, t, t)
		c.scanC(w, t, spec, l, size)
	}
}

func nativeWord(b []byte) uint64 {
	var x uint64
	for i := 7; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x
}

// scanInline is how many of a priority table's first entries a lookup
// tries inline, before it calls the table's scan for the rest: a BPF
// subprogram call costs about as much as trying a few entries, and the
// entries that match most frames tend to come first.
const scanInline = 4

// scanC writes a priority table's lookup: nsc_matchN, table.Table's
// matcher; nsc_findN, the first entry in priority order that matches (NULL
// if none), which tries the first scanInline entries inline and calls
// nsc_scanN, a bounded loop over the rest (index, -1 if none), if the
// table can hold more.
func (c *gen) scanC(w *bytes.Buffer, t int, spec *packet.TableSpec, l xdprun.Layout, size int) {
	fmt.Fprintf(w, "NSC_INLINE int nsc_match%d(const struct nsc_t%d_keys *k, const struct nsc_t%d_ent *e)\n{\n", t, t, t)
	kw, mw := 0, 0
	for j := range spec.Keys {
		if l.Words[j] == 1 {
			fmt.Fprintf(w, "\tif ((k->k[%d] & e->m[%d]) != e->m[%d] || k->k[%d] < e->m[%d] || k->k[%d] > e->m[%d])\n\t\treturn 0;\n",
				kw, mw+1, mw, kw, mw+2, kw, mw+3)
		} else {
			x := fmt.Sprintf("nsc_v(k->k[%d], k->k[%d])", kw, kw+1)
			m := func(i int) string { return fmt.Sprintf("nsc_v(e->m[%d], e->m[%d])", mw+2*i, mw+2*i+1) }
			fmt.Fprintf(w, "\tif (!nsc_veq(nsc_vand(%s, %s), %s) || nsc_vcmp(%s, %s) < 0 || nsc_vcmp(%s, %s) > 0)\n\t\treturn 0;\n",
				x, m(1), m(0), x, m(2), x, m(3))
		}
		kw += l.Words[j]
		mw += 4 * l.Words[j]
	}
	w.WriteString("\treturn 1;\n}\n\n")
	inl := min(scanInline, size)
	if inl < size {
		fmt.Fprintf(w, "__attribute__((noinline)) int nsc_scan%d(struct nsc_t%d_keys *k)\n{\n", t, t)
		fmt.Fprintf(w, "\tif (!k)\n\t\treturn -1;\n\t__u32 t = %d;\n\t__u32 *len = bpf_map_lookup_elem(&nsc_lens, &t);\n\tif (!len)\n\t\treturn -1;\n\t__u32 n = *len;\n", t)
		fmt.Fprintf(w, "\tfor (__u32 i = %d; i < %d; i++) {\n\t\tif (i >= n)\n\t\t\tbreak;\n", inl, size)
		fmt.Fprintf(w, "\t\tconst struct nsc_t%d_ent *e = bpf_map_lookup_elem(&nsc_t%d, &i);\n\t\tif (!e)\n\t\t\tbreak;\n", t, t)
		fmt.Fprintf(w, "\t\tif (nsc_match%d(k, e))\n\t\t\treturn (int)i;\n\t}\n\treturn -1;\n}\n\n", t)
	}
	at := spec.IntervalKey()
	if at >= 0 {
		c.intervalsC(w, t, l, size)
	}
	fmt.Fprintf(w, "NSC_INLINE const struct nsc_t%d_ent *nsc_find%d(struct nsc_t%d_keys *k)\n{\n", t, t, t)
	if at >= 0 {
		fmt.Fprintf(w, "\tconst struct nsc_t%d_on *on = nsc_ivl_on%d();\n\tif (on)\n\t\treturn nsc_ivl%d(k, on);\n", t, t, t)
	}
	fmt.Fprintf(w, "\t__u32 t = %d;\n\t__u32 *len = bpf_map_lookup_elem(&nsc_lens, &t);\n\tif (!len)\n\t\treturn 0;\n\t__u32 n = *len;\n\tconst struct nsc_t%d_ent *e;\n", t, t)
	for i := 0; i < inl; i++ {
		fmt.Fprintf(w, "\tif (n < %d)\n\t\treturn 0;\n\t__u32 i%d = %d;\n\te = bpf_map_lookup_elem(&nsc_t%d, &i%d);\n\tif (!e)\n\t\treturn 0;\n\tif (nsc_match%d(k, e))\n\t\treturn e;\n", i+1, i, i, t, i, t)
	}
	if inl < size {
		fmt.Fprintf(w, "\tif (n <= %d)\n\t\treturn 0;\n\t__s32 r = nsc_scan%d(k);\n\tif (r < 0)\n\t\treturn 0;\n\t__u32 ir = (__u32)r;\n\treturn bpf_map_lookup_elem(&nsc_t%d, &ir);\n", inl, t, t)
	} else {
		w.WriteString("\treturn 0;\n")
	}
	w.WriteString("}\n\n")
}

// intervalsC writes the interval index of a priority table of exact keys
// and one lpm or range key (table.IntervalIndex, filled by the runner when
// the table has one): nsc_tN_g, its groups as packet lays them out (open
// addressing over table.WordsHash of the exact keys' words, the other
// key's word zero; hi 0 in an empty slot); nsc_tN_s, the segments by
// start, each with its entry's place in nsc_tN (-1: none); nsc_tN_ivl,
// whether the index is filled, the hash's shift and the slots' mask.
// nsc_ivlN probes for the group (at most MaxProbe slots: the runner leaves
// the index off if a group lies farther) and binary-searches its segments
// in a bounded loop.
func (c *gen) intervalsC(w *bytes.Buffer, t int, l xdprun.Layout, size int) {
	at := c.s.Tables[t].Spec.IntervalKey()
	segs, slots := xdprun.IntervalMaps(size)
	fmt.Fprintf(w, "struct nsc_t%d_grp {\n\t__u64 k[%d];\n\t__u32 lo;\n\t__u32 hi;\n};\n", t, l.KeyWords)
	fmt.Fprintf(w, "struct nsc_t%d_seg {\n\t__u64 start;\n\t__s32 ent;\n\t__u32 pad;\n};\n", t)
	fmt.Fprintf(w, "struct nsc_t%d_on {\n\t__u32 on;\n\t__u32 shift;\n\t__u32 mask;\n\t__u32 pad;\n};\n", t)
	fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct nsc_t%d_grp);\n} nsc_t%d_g SEC(\".maps\");\n\n", slots, t, t)
	fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, struct nsc_t%d_seg);\n} nsc_t%d_s SEC(\".maps\");\n\n", segs, t, t)
	fmt.Fprintf(w, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct nsc_t%d_on);\n} nsc_t%d_ivl SEC(\".maps\");\n\n", t, t)
	fmt.Fprintf(w, "NSC_INLINE const struct nsc_t%d_on *nsc_ivl_on%d(void)\n{\n\t__u32 z = 0;\n\tconst struct nsc_t%d_on *on = bpf_map_lookup_elem(&nsc_t%d_ivl, &z);\n\treturn on && on->on ? on : 0;\n}\n\n", t, t, t, t)
	fmt.Fprintf(w, "NSC_INLINE const struct nsc_t%d_ent *nsc_ivl%d(const struct nsc_t%d_keys *k, const struct nsc_t%d_on *on)\n{\n", t, t, t, t)
	// table.WordsHash of the exact words, its multipliers as constants.
	var terms []string
	for j := range l.KeyWords {
		if j != at {
			var unit [packet.MaxKeyWords]uint64
			unit[j] = 1
			terms = append(terms, fmt.Sprintf("k->k[%d] * %s", j, ulit(table.WordsHash(unit[0], unit[1], unit[2], unit[3]))))
		}
	}
	if len(terms) == 0 {
		terms = []string{"0"}
	}
	fmt.Fprintf(w, "\t__u64 h = %s;\n\t__u32 home = (__u32)(h >> (on->shift & 63));\n", strings.Join(terms, " + "))
	fmt.Fprintf(w, "\tconst struct nsc_t%d_grp *gr = 0;\n\tfor (__u32 d = 0; d < %d; d++) {\n\t\t__u32 i = (home + d) & on->mask;\n", t, xdprun.MaxProbe)
	fmt.Fprintf(w, "\t\tconst struct nsc_t%d_grp *x = bpf_map_lookup_elem(&nsc_t%d_g, &i);\n\t\tif (!x || !x->hi)\n\t\t\treturn 0;\n", t, t)
	var same []string
	for j := range l.KeyWords {
		if j != at {
			same = append(same, fmt.Sprintf("x->k[%d] == k->k[%d]", j, j))
		}
	}
	if len(same) == 0 {
		same = []string{"1"}
	}
	fmt.Fprintf(w, "\t\tif (%s) {\n\t\t\tgr = x;\n\t\t\tbreak;\n\t\t}\n\t}\n\tif (!gr)\n\t\treturn 0;\n", strings.Join(same, " && "))
	fmt.Fprintf(w, "\t__u64 v = k->k[%d];\n\t__u32 j = gr->lo, n = gr->hi - gr->lo;\n\tconst struct nsc_t%d_seg *s;\n", at, t)
	// The last segment starting at or before v (the first starts at 0).
	fmt.Fprintf(w, "\tfor (int it = 0; it < %d; it++) {\n\t\tif (n <= 1)\n\t\t\tbreak;\n", bits.Len(uint(segs)))
	fmt.Fprintf(w, "\t\t__u32 half = n / 2, m = j + half;\n\t\ts = bpf_map_lookup_elem(&nsc_t%d_s, &m);\n\t\tif (!s)\n\t\t\treturn 0;\n", t)
	w.WriteString("\t\tif (s->start <= v)\n\t\t\tj = m;\n\t\tn -= half;\n\t}\n")
	fmt.Fprintf(w, "\ts = bpf_map_lookup_elem(&nsc_t%d_s, &j);\n\tif (!s || s->ent < 0)\n\t\treturn 0;\n\t__u32 e = (__u32)s->ent;\n\treturn bpf_map_lookup_elem(&nsc_t%d, &e);\n}\n\n", t, t)
}

// maxFixed is the longest fixed part of a header (at least 8 bytes).
func (c *gen) maxFixed() int {
	n := 8
	for _, h := range c.s.Headers {
		if !h.Metadata {
			n = max(n, (h.FixedBytes()+7)/8*8)
		}
	}
	return n
}

// fwd64C is nsc_fwd64: the bytes [0, off) of a frame move forward by n,
// off at most 64 (what pop does in front of the header it removes), inline
// and without helper calls. From 8 bytes on, one straight block per number
// of 8-byte words: every word is loaded before any is stored (the last
// one, at 0, overlapping the one above it when off is not a multiple of 8),
// so the move takes no more loads than words, no load waits for the
// move's own stores, and each block's offsets are known ranges to the
// verifier; fewer than 8 bytes go one by one.
func fwd64C() string {
	var w strings.Builder
	w.WriteString(`/* The bytes [0, off) of a frame move forward by n, off at most 64: what
 * pop does in front of the header it removes (fwd64C in file.go). */
NSC_INLINE int nsc_fwd64(void *data, void *data_end, __u32 off, __u32 n)
{
	__u32 i = off & 127;
	if (i > 64)
		return -1;
	if (i < 8) {
		for (int k = 0; k < 7; k++) {
			if (i == 0)
				break;
			i--;
			asm volatile("" : "+r"(i)); /* keep the masks for the verifier */
			unsigned char *s = (unsigned char *)data + (i & 7);
			unsigned char *t = (unsigned char *)data + ((i + n) & NSC_OM);
			NSC_HIDE(s);
			NSC_HIDE(t);
			if ((void *)(s + 1) > data_end || (void *)(t + 1) > data_end)
				return -1;
			*t = *s;
		}
		return 0;
	}
	__u32 words = (i + 7) >> 3;
`)
	// In the block for k words (8k-7 <= off <= 8k), word j < k-1 starts
	// at r + 8(k-2-j) with r = off - 8(k-1), 1 <= r <= 8: all are at
	// constant offsets from one pointer, checked once, on each side.
	for k := 8; k >= 1; k-- {
		fmt.Fprintf(&w, "\tif (words == %d) {\n", k)
		if k > 1 {
			fmt.Fprintf(&w, "\t\t__u32 r = i - %d;\n", 8*(k-1))
			fmt.Fprintf(&w, "\t\tunsigned char *s = (unsigned char *)data + (r & 15), *t = (unsigned char *)data + ((r + n) & NSC_OM);\n")
			fmt.Fprintf(&w, "\t\tNSC_HIDE(s);\n\t\tNSC_HIDE(t);\n")
			fmt.Fprintf(&w, "\t\tif ((void *)(s + %d) > data_end || (void *)(t + %d) > data_end)\n\t\t\treturn -1;\n", 8*(k-1), 8*(k-1))
		}
		w.WriteString("\t\tunsigned char *s0 = (unsigned char *)data, *t0 = (unsigned char *)data + (n & NSC_OM);\n")
		w.WriteString("\t\tNSC_HIDE(s0);\n\t\tNSC_HIDE(t0);\n")
		w.WriteString("\t\tif ((void *)(s0 + 8) > data_end || (void *)(t0 + 8) > data_end)\n\t\t\treturn -1;\n")
		for j := 0; j < k-1; j++ {
			fmt.Fprintf(&w, "\t\t__u64 w%d = *(__u64 *)(s + %d);\n", j, 8*(k-2-j))
		}
		w.WriteString("\t\t__u64 wl = *(__u64 *)s0;\n")
		for j := 0; j < k-1; j++ {
			fmt.Fprintf(&w, "\t\t*(__u64 *)(t + %d) = w%d;\n", 8*(k-2-j), j)
		}
		w.WriteString("\t\t*(__u64 *)t0 = wl;\n")
		w.WriteString("\t\treturn 0;\n\t}\n")
	}
	w.WriteString("\treturn -1;\n}\n\n")
	return w.String()
}

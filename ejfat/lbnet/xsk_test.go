package lbnet_test

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/internal/xsk"
	"github.com/dragonet-go/nsc/packet/table"
)

// TestXSK runs lb-2025 (HostRaw, with ejfat/testdata/lb-2025.tables) on
// an AF_XDP socket on one end of a veth pair (MTU 9000, a namespace
// each) and sends it, from the other end over an AF_PACKET socket, the
// crafted corpus and the frames at the edges of length up to the MTU (LB
// frames of both IP versions to forward, ARP and ICMP to answer, frames
// to drop for every reason the corpus reaches, frames too long for a
// chunk). What comes back out of the veth must be, frame by frame and
// byte by byte, what the generated fast path sends for the same frames,
// in the same order; the LB's drops by site its drops; and the frames
// longer than a chunk holds (xsk) must be counted oversize, not run.
// 256 chunks for some 1,800 frames: each goes round the rings.
func TestXSK(t *testing.T) {
	frames := xskFrames(t)
	v, lb := xskLB(t, 256)
	stop := start(t, lb)
	fd, ifindex := v.PeerSocket(t)

	// The oracle: the fast path alone, on the same tables.
	ts, _ := tables(t, lb2025Tables(t))
	pl, err := lbfast.New("lb-2025", ts)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var long uint64
	var buf []byte
	maxLen := lbnet.XSKMaxLen
	for _, f := range frames {
		if len(f) > maxLen {
			long++
			continue
		}
		if r := difftest.Fast(pl, f, &buf); r.Data != "" {
			want = append(want, r.Data)
		}
	}
	wantDrops := map[fastpath.DropSite]uint64{}
	pl.Each(func(kind, name, reason string, n uint64) {
		if kind == fastpath.CountDrop {
			wantDrops[fastpath.DropSite{Node: name, Reason: reason}] += n
		}
	})

	// Send in bursts the LB keeps up with: the kernel drops what finds
	// no chunk in the fill ring.
	to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6}
	out := xdptest.Capture(t, fd)
	for i := 0; i < len(frames); i += 64 {
		burst := frames[i:min(i+64, len(frames))]
		for _, f := range burst {
			if err := syscall.Sendto(fd, f, 0, to); err != nil {
				t.Fatalf("send %d bytes: %v", len(f), err)
			}
		}
		for deadline := time.Now().Add(wait); lb.Stats().Received < uint64(i+len(burst)); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the LB received %d of %d frames", lb.Stats().Received, i+len(burst))
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := out()
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("frame %d out:\n got %s\nwant %s", i, got[i], want[i])
				break
			}
		}
		t.Fatalf("%d frames came out, the fast path sends %d", len(got), len(want))
	}
	s := lb.Stats()
	wantStats := lbnet.Stats{Received: uint64(len(frames)), Forwarded: uint64(len(want)), Dropped: uint64(len(frames)-len(want)) - long, Oversize: long}
	if s != wantStats {
		t.Errorf("stats %+v, want %+v", s, wantStats)
	}
	if diff := cmp.Diff(wantDrops, lb.Drops()); diff != "" {
		t.Errorf("drops (-fast path +LB):\n%s", diff)
	}
	if long == 0 || len(want) < 100 || len(wantDrops) < 5 {
		t.Errorf("%d frames too long, %d forwarded, %d drop sites: the test set-up is wrong", long, len(want), len(wantDrops))
	}
	t.Logf("%d frames: %d forwarded as the fast path, %d dropped (%v), %d oversize",
		len(frames), len(want), s.Dropped, wantDrops, long)
}

// xskFrames are TestXSK's frames: the corpus and the edges of length, of
// 14 bytes (an AF_PACKET socket sends no shorter) up to the MTU.
func xskFrames(t *testing.T) [][]byte {
	corpus, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{14, 59, 60, 1514, lbnet.XSKMaxLen, lbnet.XSKMaxLen + 1, 9014}
	seeds, err := ejfat.EdgeSeeds(sizes)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for _, f := range append(corpus, difftest.Edges(seeds, sizes)...) {
		if len(f) >= 14 && len(f) <= 9014 {
			frames = append(frames, f)
		}
	}
	return frames
}

func lb2025Tables(t testing.TB) string {
	b, err := os.ReadFile("../testdata/lb-2025.tables")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// xskLB makes a veth pair (MTU 9000, IPv6 off: the kernels send nothing
// of their own) and an lb-2025 LB with the reference tables on an AF_XDP
// socket of frames chunks on queue 0 of its end, whose MAC is the LB's.
func xskLB(t testing.TB, frames int) (xdptest.Veth, *lbnet.LB) {
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	v := xdptest.Veth{NS: "lbxsk-" + tag, Dev: "lbxsk", MAC: "00:aa:bb:cc:dd:ee", PeerNS: "lbxsp-" + tag, PeerDev: "lbxsp", PeerMAC: "00:11:22:33:44:55", MTU: 9000}
	v.Up(t)
	v.DisableIPv6(t)
	cfg := lbnet.XSKConfig
	cfg.Frames = frames
	s := xdptest.OpenXSK(t, v.NS, v.Dev, cfg)
	lb, err := lbnet.New(lbnet.Config{XSK: []*xsk.Socket{s}, New: func(ts []*table.Table) (fastpath.Pipeline, error) { return lbfast.New("lb-2025", ts) }})
	if err != nil {
		t.Fatal(err)
	}
	setTables(t, lb, lb2025Tables(t))
	return v, lb
}

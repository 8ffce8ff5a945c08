package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
)

// TestLBAFXDP runs `nsc lb --afxdp` as a process in a namespace of its
// own, on one end of a veth pair, and sends it the crafted corpus from
// the other end twice, with a SIGHUP between: what comes out is what the
// generated fast path sends for the same frames, in order; at SIGTERM it
// exits 0 with counters (text on stderr, JSON on stdout) that are the
// fast path's, its drops by site among them.
func TestLBAFXDP(t *testing.T) {
	tag := fmt.Sprint(os.Getpid())
	v := xdptest.Veth{NS: "nsclbx-" + tag, Dev: "nsclbx", MAC: "00:aa:bb:cc:dd:ee", PeerNS: "nsclbp-" + tag, PeerDev: "nsclbp", PeerMAC: "00:11:22:33:44:55"}
	v.Up(t)
	v.DisableIPv6(t)
	tables, _ := filepath.Abs("../../ejfat/testdata/lb-2025.tables")
	p := startNSCIn(t, v.NS, "lb", "--afxdp", v.Dev, "--tables", tables, "--json")
	select {
	case l := <-p.stderr:
		if strings.Contains(l, "CAP_NET_ADMIN") || strings.Contains(l, "address family not supported") {
			xdptest.Need(t, l)
		}
		if !strings.Contains(l, "forwarding on nsclbx queue 0 (AF_XDP, copy mode) with 1 worker") {
			t.Fatalf("nsc lb: %s", l)
		}
	case <-time.After(wait):
		t.Fatal("nsc lb did not start")
	}

	corpus, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for _, f := range corpus {
		if len(f) >= 14 && len(f) <= 1514 {
			frames = append(frames, f)
		}
	}
	ts, err := lbfast.Tables("lb-2025", tables, mustOpen(t, tables))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := lbfast.New("lb-2025", ts)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var buf []byte
	for range 2 {
		for _, f := range frames {
			if o := difftest.Fast(pl, f, &buf); o.Data != "" {
				want = append(want, o.Data)
			}
		}
	}

	fd, ifindex := v.PeerSocket(t)
	out := xdptest.Capture(t, fd)
	to := &syscall.SockaddrLinklayer{Ifindex: ifindex, Halen: 6}
	send := func() {
		for _, f := range frames {
			if err := syscall.Sendto(fd, f, 0, to); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
	}
	send()
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.expect(t, p.stderr, "reloaded "+tables)
	send()
	time.Sleep(200 * time.Millisecond) // the frames cross the veth
	code, _ := p.stop(t, syscall.SIGTERM)
	if got := out(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d frames came out, the fast path sends %d", len(got), len(want))
	}
	_, lines := p.waitExit(t)
	p.mu.Lock()
	text := strings.Join(p.errOut, "\n")
	p.mu.Unlock()
	j := decode(t, "lb", strings.Join(lines, "\n"))
	sameNumbers(t, "lb", j, numbers(t, `(?P<received>\d+) received, (?P<forwarded>\d+) forwarded, (?P<dropped>\d+) dropped, (?P<oversize>\d+) oversize, (?P<send_errors>\d+) send errors`, text))
	if code != 0 || j["received"] != float64(2*len(frames)) || j["forwarded"] != float64(len(want)) || j["dropped"] != float64(2*len(frames)-len(want)) {
		t.Errorf("nsc lb: exit %d, %s", code, text)
	}
	pl.Each(func(kind, name, reason string, n uint64) {
		if kind == fastpath.CountDrop && !strings.Contains(text, fmt.Sprintf("drop %-24s %6d  (%s)", name, n, reason)) {
			t.Errorf("nsc lb does not count %d drops at %s (%s): %s", n, name, reason, text)
		}
	})
}

func mustOpen(t *testing.T, name string) *os.File {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLBAFXDPUsage: flags that do not go with --afxdp, a missing
// interface, and a process without the capabilities are refused.
func TestLBAFXDPUsage(t *testing.T) {
	tables := "ejfat/testdata/lb-2025.tables"
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--afxdp", "lo", "--listen", "127.0.0.1:0"}, "one of --listen and --afxdp are required"},
		{[]string{"--listen", "127.0.0.1:0", "--queue", "1"}, "--queue goes with --afxdp"},
		{[]string{"--afxdp", "lo", "--workers", "2"}, "--workers does not go with --afxdp"},
		{[]string{"--afxdp", "lo", "--max-datagram", "9000"}, "--max-datagram does not go with --afxdp"},
		{[]string{"--afxdp", "nsc-nope0"}, "--afxdp nsc-nope0: no such interface"},
	} {
		code, _, stderr := nsc(t, append([]string{"lb", "--tables", tables}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.stderr) {
			t.Errorf("nsc lb %s: exit %d, %q; want %d and %q", c.args, code, stderr, exitUsage, c.stderr)
		}
	}
	// Without capabilities (setpriv drops them all, root or not), the
	// socket is refused and nsc says what it needs.
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv to drop capabilities with")
	}
	cmd := exec.Command("setpriv", "--bounding-set=-all", "--inh-caps=-all", os.Args[0], "lb", "--tables", "../../"+tables, "--afxdp", "lo")
	cmd.Env = append(os.Environ(), "NSC_TEST_AS_NSC=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "need CAP_NET_ADMIN") {
		t.Errorf("nsc lb --afxdp without capabilities: %v, %s", err, out)
	}
}

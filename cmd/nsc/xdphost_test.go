package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/dataflow"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/difftest"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/dragonet-go/nsc/sim"
)

// TestXDPAttachHost runs lb-2026 split between XDPSmall and the host for
// real: two network namespaces joined by a veth pair; on the LB's end
// `nsc xdp attach --host lb-2026` attaches the device's part (as nsc
// compile writes it) and runs the host part on every frame the program
// passes, sending what it emits back out of the veth. The other end sends
// the LB corpus and 2,000 frames derived from it over a packet socket:
// frames the program answers itself (XDP_TX), frames that need the
// calendar, which it has no map for, and frames for the host's stack
// (ToHost); and it receives what comes back: the frames the interpreter
// on lb-2026 alone, with the same entries, sends to the wire, as a
// multiset, and no others (what either drops does not come back). The
// host part must run exactly the frames the program passed (counted by
// the program): the packet socket does not see what XDP transmitted or
// dropped. IPv6 is off in both namespaces so that their kernels send
// nothing of their own; the namespaces are removed at the end, failed or
// not.
func TestXDPAttachHost(t *testing.T) {
	xdptest.Require(t)
	dir := t.TempDir()
	if code, _, stderr := nsc(t, "compile", "models/ejfat/lb-2026.nsc", "--lpg", "LB2026", "--prg", "XDPSmall", "--target", "xdp", "-o", dir); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, stderr)
	}
	tables, err := filepath.Abs("../../ejfat/testdata/lb-2026.tables")
	if err != nil {
		t.Fatal(err)
	}

	// What the LPG alone sends to the wire (its emit TxQueue; TxWire in
	// the XDP PRG) for each frame the veth carries.
	m, g, err := ejfat.LPG("lb-2026")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.Open(tables)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ejfat.Tables(m, tables, script)
	script.Close()
	if err != nil {
		t.Fatal(err)
	}
	lpg, err := sim.New(g, ts)
	if err != nil {
		t.Fatal(err)
	}
	corpus, err := ejfat.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	var want []string
	// The crafted frames and 2,000 derived from them.
	for _, f := range append(corpus, difftest.Mutate(corpus, 2000, 7)...) {
		if len(f) < 14 || len(f) > 9014 {
			continue // not a frame of the veth's (MTU 9000)
		}
		frames = append(frames, f)
		lpg.Run(f, func(n *dataflow.Node, data []byte) {
			if n.Name == "TxQueue" {
				want = append(want, hex.EncodeToString(data))
			}
		})
	}

	out, back := attachHost(t, "lb-2026", filepath.Join(dir, "lb2026.o"), tables, frames, want, syscall.SIGINT)
	t.Logf("nsc xdp attach:\n%s", strings.Join(out, "\n"))
	device, host, ok := strings.Cut(strings.Join(out, "\n"), "host part of lb-2026:\n")
	if !ok {
		t.Fatalf("no host part counters:\n%s", strings.Join(out, "\n"))
	}
	sinks := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range regexp.MustCompile(`sink (\w+) +(\d+)  -> (.*)`).FindAllStringSubmatch(s, -1) {
			n, _ := strconv.Atoi(l[2])
			m[l[1]+" -> "+l[3]] = n
		}
		return m
	}
	ds, hs := sinks(device), sinks(host)
	passed := ds["PuntToHost -> XDP_PASS"] + ds["ToHost -> XDP_PASS"]
	if !strings.Contains(host, fmt.Sprintf("%d packets in\n", passed)) {
		t.Errorf("the program passed %d frames; the host part did not run exactly those:\n%s", passed, host)
	}
	if ds["TxWire -> XDP_TX"] == 0 || ds["PuntToHost -> XDP_PASS"] == 0 || hs["TxWire -> sent out of vlb"] == 0 || hs["ToHost -> left to the kernel, which has the frame"] == 0 {
		t.Errorf("the corpus misses a path (answered by the program, sent by the host, to the host's stack):\n%s", strings.Join(out, "\n"))
	}
	if strings.Contains(host, "not sent") || strings.Contains(host, "lost") || strings.Contains(device, "longer than") {
		t.Errorf("frames lost or not run:\n%s", strings.Join(out, "\n"))
	}
	t.Logf("%d frames sent, %d came back (%d transmitted by the program, %d sent by the host part); %d passed to the host part", len(frames), len(back), ds["TxWire -> XDP_TX"], hs["TxWire -> sent out of vlb"], passed)
}

// multisetDiff returns the elements of sorted a not in sorted b, and of b
// not in a, each as often as it is in excess.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] == b[0]:
			a, b = a[1:], b[1:]
		case a[0] < b[0]:
			onlyA, a = append(onlyA, a[0]), a[1:]
		default:
			onlyB, b = append(onlyB, b[0]), b[1:]
		}
	}
	return append(onlyA, a...), append(onlyB, b...)
}

// vethNamespaces makes two network namespaces for a test of role, joined
// by a veth pair of MTU 9000: dev (MAC 00:aa:bb:cc:dd:ee) in the first,
// peer (00:11:22:33:44:55) in the second, both up. IPv6 is off in both, so
// that their kernels send nothing of their own. They are removed at the
// end of the test, failed or not. Without the ip command the test skips.
func vethNamespaces(t testing.TB, role, dev, peer string) (devNS, peerNS string) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the ip command (iproute2) is missing")
	}
	tag := strconv.Itoa(os.Getpid())
	devNS, peerNS = "nschost-"+role+"-"+tag, "nschost-"+role+"tx-"+tag
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{devNS, peerNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	ip("-n", devNS, "link", "add", dev, "address", "00:aa:bb:cc:dd:ee", "mtu", "9000", "type", "veth", "peer", "name", peer, "address", "00:11:22:33:44:55", "mtu", "9000", "netns", peerNS)
	ip("-n", devNS, "link", "set", dev, "up")
	ip("-n", peerNS, "link", "set", peer, "up")
	return devNS, peerNS
}

// receive reads frames from conn, as hex, until want came and three read
// timeouts passed with nothing, or the test's wait is over.
func receive(t *testing.T, conn *xdprun.PacketConn, want int) <-chan []string {
	got := make(chan []string, 1)
	go func() {
		var fs []string
		buf := make([]byte, 9100)
		deadline := time.Now().Add(wait)
		quiet := 0 // Read timeouts since the last frame, once all came
		for time.Now().Before(deadline) && quiet < 3 {
			n, err := conn.Read(buf)
			if err != nil {
				t.Error(err)
				break
			}
			if n == 0 {
				if len(fs) >= want {
					quiet++
				}
				continue
			}
			quiet = 0
			fs = append(fs, hex.EncodeToString(buf[:n]))
		}
		got <- fs
	}()
	return got
}

// sendInOrder writes frames to conn from one thread on one CPU, in bounded
// bursts (the veth's backlog holds 1000): the peer receives them in that
// order (a veth delivers a frame to the backlog of the CPU that sent it).
func sendInOrder(t *testing.T, conn *xdprun.PacketConn, frames [][]byte) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var cpus unix.CPUSet
		if err := unix.SchedGetaffinity(0, &cpus); err != nil {
			done <- err
			return
		}
		one := unix.CPUSet{}
		for c := range 1024 {
			if cpus.IsSet(c) {
				one.Set(c)
				break
			}
		}
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			done <- err
			return
		}
		for i, f := range frames {
			if err := conn.Write(f); err != nil {
				done <- fmt.Errorf("send frame %d (%d bytes): %w", i, len(f), err)
				return
			}
			if i%32 == 31 {
				time.Sleep(time.Millisecond)
			}
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// sameFrames checks that the frames that came back are those the
// interpreter sends, as multisets.
func sameFrames(t *testing.T, back, want []string) {
	t.Helper()
	slices.Sort(back)
	slices.Sort(want)
	if !slices.Equal(back, want) {
		extra, missing := multisetDiff(back, want)
		t.Errorf("%d frames came back, the interpreter sends %d: %d not sent %q, %d missing %q", len(back), len(want), len(extra), extra[:min(len(extra), 3)], len(missing), missing[:min(len(missing), 3)])
	}
}

// attachHost runs nsc xdp attach --host model with program obj and the
// table script tables on vlb, one end of a veth pair (vethNamespaces); the
// other end, vtx, sends frames in order and receives what comes back,
// which must be the frames want (hex) as a multiset. Then nsc gets sig and
// must exit cleanly: its output, and what came back.
func attachHost(t *testing.T, model, obj, tables string, frames [][]byte, want []string, sig syscall.Signal) (out, back []string) {
	t.Helper()
	devNS, peerNS := vethNamespaces(t, model, "vlb", "vtx")
	p := startNSCIn(t, devNS, "xdp", "attach", "--dev", "vlb", "--mode", "generic", "--obj", obj, "--tables", tables, "--host", model)
	p.expect(t, p.stdout, "host part of "+model+" on vlb")
	var conn *xdprun.PacketConn
	xdptest.InNetns(t, peerNS, func() (err error) {
		conn, err = xdprun.ListenPacket("vtx", 4<<20)
		return err
	})
	defer conn.Close()
	got := receive(t, conn, len(want))
	sendInOrder(t, conn, frames)
	back = <-got
	sameFrames(t, back, want)
	p.cmd.Process.Signal(sig)
	code, out := p.waitExit(t)
	if code != exitOK {
		t.Fatalf("nsc xdp attach: exit %d:\n%s", code, strings.Join(out, "\n"))
	}
	return out, back
}

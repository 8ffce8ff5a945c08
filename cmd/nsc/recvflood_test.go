package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

var recvFlood = flag.Duration("recv-flood", 3*time.Second, "how long TestRecvUnderFlood's legitimate sender runs (the issue's test: 30s)")

// TestRecvUnderFlood: nsc recv with its default bounds, under a flood of
// malformed 1 KB datagrams (first segments claiming events of up to
// 2^32-1 bytes at any offset, short and bad headers) on both its ports,
// stays within the memory bound it states (the kernel's peak resident set,
// VmHWM) and delivers every event nsc send sends alongside, verified.
func TestRecvUnderFlood(t *testing.T) {
	const rate, size = 200, 256 << 10
	events := int(recvFlood.Seconds() * rate)
	recv, port := startRecv(t, "--verify")
	bound := atoi(regexp.MustCompile(`in at most (\d+) MiB`).FindStringSubmatch(recv.out[0])[1]) << 20
	if bound > 1300<<20 {
		t.Errorf("nsc recv's bound with default flags is %d MiB, docs/reassembly.md says about 1.25 GiB", bound>>20)
	}
	stop, flooded := floodRecv(t, port)
	send := startNSC(t, "send", "--to", fmt.Sprintf("127.0.0.1:%d", port), "--events", strconv.Itoa(events),
		"--size", strconv.Itoa(size), "--rate", strconv.Itoa(rate), "--data-id", "7")
	select { // waitExit's bound is for a process told to stop; this one sends for --recv-flood
	case <-send.exited:
	case <-time.After(*recvFlood + wait):
		t.Fatalf("nsc send did not end in %v", *recvFlood+wait)
	}
	if code, out := send.waitExit(t); code != 0 {
		t.Fatalf("nsc send exited %d: %q", code, out)
	}
	progress := regexp.MustCompile(`^nsc recv: (\d+) events`)
	until(t, "every event delivered", func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		m := progress.FindStringSubmatch(recv.errOut[len(recv.errOut)-1])
		return m != nil && atoi(m[1]) >= events
	})
	peak := vmHWM(t, recv.cmd.Process.Pid)
	stop()
	n := <-flooded
	recv.cmd.Process.Signal(os.Interrupt)
	code, out := recv.waitExit(t)
	if want := fmt.Sprintf("%d events delivered, %d bytes", events, events*size); code != 0 ||
		!strings.HasPrefix(out[len(out)-1], want) || !strings.HasSuffix(out[len(out)-1], fmt.Sprintf("%d verified, 0 bad", events)) {
		t.Errorf("nsc recv exited %d: %q; want %q, all verified", code, out, want)
	}
	packets := counter(t, out, "packets")
	t.Logf("%d legitimate events of %d bytes and %d flood datagrams in %v: %d datagrams processed, peak RSS %d MiB of the %d MiB bound",
		events, size, n, *recvFlood, packets, peak>>20, bound>>20)
	if peak > bound {
		t.Errorf("peak RSS %d MiB, past the bound of %d MiB nsc recv states", peak>>20, bound>>20)
	}
	if packets < n/2 {
		t.Errorf("nsc recv processed %d datagrams of %d flood datagrams and the events'", packets, n)
	}
}

// floodRecv sends malformed datagrams to ports port and port+1 of
// 127.0.0.1, 100,000 a second, until stop; flooded then says how many.
func floodRecv(t *testing.T, port int) (stop func(), flooded chan int) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	flooded = make(chan int, 1)
	const batch, perSecond = 50, 100_000
	go func() {
		defer c.Close()
		pc := ipv4.NewPacketConn(c)
		rng := rand.New(rand.NewPCG(1, 2))
		msgs := make([]ipv4.Message, batch)
		payload := make([]byte, 1000)
		n, start := 0, time.Now()
		for {
			select {
			case <-done:
				flooded <- n
				return
			default:
			}
			for i := range msgs {
				msgs[i].Addr = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + i%2}
				msgs[i].Buffers = [][]byte{floodDatagram(rng, payload)}
			}
			if k, err := pc.WriteBatch(msgs, 0); err == nil {
				n += k
			}
			if ahead := time.Duration(n)*time.Second/perSecond - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
	}()
	return func() { close(done) }, flooded
}

// floodDatagram is one malformed datagram: mostly a first segment of a
// new event claiming up to 2^32-1 bytes at a random offset within it,
// else a datagram shorter than the RE header or with a bad version.
func floodDatagram(rng *rand.Rand, payload []byte) []byte {
	switch rng.IntN(10) {
	case 0:
		return payload[:rng.IntN(20)]
	case 1:
		return append([]byte{0x20, 0}, payload[:100]...)
	}
	length := uint32(len(payload)) + rng.Uint32N(256<<20)
	if rng.IntN(4) == 0 {
		length = rng.Uint32()
	}
	off := rng.Uint32N(max(length-uint32(len(payload)), 1))
	return lbRE(0, 1<<40|rng.Uint64N(1<<40), uint16(rng.IntN(7)), off, length, payload)
}

// vmHWM is process pid's peak resident set, bytes, as the kernel counts it.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Skipf("no VmHWM in /proc/%d/status", pid)
	}
	return atoi(string(m[1])) << 10
}

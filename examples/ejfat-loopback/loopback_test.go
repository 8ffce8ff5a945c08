// Package loopback holds the test of the EJFAT loopback example: the
// shipped tables deliver every event nsc send sends through nsc lb to
// nsc recv.
package loopback

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort is a UDP port on 127.0.0.1 free now, in lo..hi.
func freePort(t *testing.T, lo, hi int) int {
	t.Helper()
	for range 100 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: lo + rand.IntN(hi-lo+1)})
		if err == nil {
			defer c.Close()
			return c.LocalAddr().(*net.UDPAddr).Port
		}
	}
	t.Fatalf("no free UDP port in %d..%d", lo, hi)
	return 0
}

// TestLoopback runs loopback.sh as a user would, on ports of its own (the
// tables' member port replaced by the receiver's), and holds it to what
// nsc recv verified.
func TestLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nsc and runs three processes")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nsc")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/nsc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	shipped, err := os.ReadFile("lb-2025.tables")
	if err != nil {
		t.Fatal(err)
	}
	// The LB takes datagrams to ports 16384..32767 only (the spec's LB
	// port range); the receiver's is any.
	recvPort, lbPort := freePort(t, 1024, 65535), freePort(t, 16384, 32767)
	if !strings.Contains(string(shipped), " 0x4a38 ") {
		t.Fatal("lb-2025.tables no longer names port 19000 (0x4a38)")
	}
	tables := filepath.Join(dir, "lb.tables")
	os.WriteFile(tables, []byte(strings.ReplaceAll(string(shipped), " 0x4a38 ", fmt.Sprintf(" %#x ", recvPort))), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Second)
	defer cancel()
	const events = 40
	cmd := exec.CommandContext(ctx, "sh", "loopback.sh")
	cmd.Env = append(os.Environ(), "NSC="+bin, fmt.Sprintf("EVENTS=%d", events), fmt.Sprintf("LB_PORT=%d", lbPort),
		fmt.Sprintf("RECV_PORT=%d", recvPort), "TABLES="+tables)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loopback.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{fmt.Sprintf("%d events delivered", events), fmt.Sprintf("%d verified, 0 bad", events)} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("loopback.sh did not deliver every event (%q):\nstdout:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
		}
	}
}

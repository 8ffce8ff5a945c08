package xdptest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Need skips t for a missing tool or privilege, or fails it under CI.
func Need(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and this test cannot run: %s", why)
	}
	t.Skip(why)
}

// Veth is a veth pair between two network namespaces of a test's own,
// each end with its MAC address and both with MTU (0: the kernel's).
type Veth struct {
	NS, Dev, MAC, PeerNS, PeerDev, PeerMAC string
	MTU                                    int
}

// Up makes the namespaces and the pair, both ends up, removed when t
// ends, failed or not; it skips t (Need) when it cannot run ip or may not
// make namespaces. It returns the ip command, which fails t.
func (v Veth) Up(t testing.TB) func(args ...string) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		Need(t, "the ip command (iproute2) is missing")
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			if os.Geteuid() != 0 {
				Need(t, fmt.Sprintf("ip %s: %v (network namespaces need root)", strings.Join(args, " "), err))
			}
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{v.NS, v.PeerNS} {
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	var mtu []string
	if v.MTU > 0 {
		mtu = []string{"mtu", fmt.Sprint(v.MTU)}
	}
	args := append([]string{"-n", v.NS, "link", "add", v.Dev}, mtu...)
	args = append(append(args, "address", v.MAC, "type", "veth", "peer", "name", v.PeerDev), mtu...)
	ip(append(args, "address", v.PeerMAC, "netns", v.PeerNS)...)
	ip("-n", v.NS, "link", "set", v.Dev, "up")
	ip("-n", v.PeerNS, "link", "set", v.PeerDev, "up")
	return ip
}

// PacketSocket opens an AF_PACKET socket bound to interface dev (in the
// calling thread's namespace: call it in InNetns), with a receive
// timeout of 100 ms.
func PacketSocket(dev string) (fd, ifindex int, err error) {
	const ethPAll = 0x0003
	proto := int(uint16(ethPAll)<<8 | uint16(ethPAll)>>8)
	fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, proto)
	if err != nil {
		return 0, 0, err
	}
	ni, err := net.InterfaceByName(dev) // netlink, in the thread's namespace
	if err != nil {
		syscall.Close(fd)
		return 0, 0, err
	}
	ifc := ni.Index
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifc}); err != nil {
		syscall.Close(fd)
		return 0, 0, err
	}
	tv := syscall.Timeval{Usec: 100000}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return 0, 0, err
	}
	return fd, ifc, nil
}

// DisableIPv6 turns IPv6 off on both ends, so that neither kernel sends
// frames of its own (router solicitations, MLD reports) among a test's.
func (v Veth) DisableIPv6(t testing.TB) {
	t.Helper()
	for _, end := range [][2]string{{v.NS, v.Dev}, {v.PeerNS, v.PeerDev}} {
		if out, err := exec.Command("ip", "netns", "exec", end[0], "sysctl", "-qw", "net.ipv6.conf."+end[1]+".disable_ipv6=1").CombinedOutput(); err != nil {
			t.Fatalf("sysctl: %v %s", err, out)
		}
	}
}

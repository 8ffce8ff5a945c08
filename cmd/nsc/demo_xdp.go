package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// demoNet is where the system demo's processes run and meet: on loopback
// with the CP's in-process LB, or (--xdp) with the LB as the model's XDP
// program on a veth whose peer is in a network namespace of the
// receivers and senders, and a second veth pair, without XDP, for their
// calls and sync messages to the CP.
type demoNet struct {
	lb      string   // the LB's data address, IP:port
	cpIP    string   // the address the CP serves gRPC and sync on
	hostIP  string   // the receivers' and senders' address
	syncIP  string   // the address the senders' sync messages come from (a reserved sender too)
	netns   string   // their network namespace; "" for the demo's own
	lbFlags []string // nsc cp's data-plane flags (with --lb-tables)
	tables  string   // the LB's entries the CP does not write
	mtu     string   // the senders' --mtu
	cleanup func()
}

// loopbackNet is the demo on loopback.
func loopbackNet() (*demoNet, error) {
	lbIP, err := freeLBAddress()
	if err != nil {
		return nil, err
	}
	ip := binary.BigEndian.Uint32(lbIP.To4())
	lb := fmt.Sprintf("%s:%d", lbIP, lbPort)
	return &demoNet{lb: lb, cpIP: "127.0.0.1", hostIP: "127.0.0.1", syncIP: "127.0.0.1", lbFlags: []string{"--lb-listen", lb}, mtu: "9000", cleanup: func() {},
		tables: fmt.Sprintf("table_add mac_dst_filter_table set_mac_sa 0&&&0 0x00aabbccddee => 0x00aabbccddee 0\n"+
			"table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0\n", ip, ip)}, nil
}

// xdpNet makes the namespace and veth pairs of the demo with --xdp (root
// only): data 10.201.N.1 (the XDP LB's side) – 10.201.N.2, control
// 10.202.N.1 (the CP) – 10.202.N.2, N the first of a run's own that no
// interface uses, so that demos (and tests) run side by side.
func xdpNet() (*demoNet, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("--xdp needs root (a network namespace, veths, an XDP program)")
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	inUse := map[[2]byte]bool{}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok {
			if v4 := ip.IP.To4(); v4 != nil && v4[0] == 10 {
				inUse[[2]byte{v4[1], v4[2]}] = true
			}
		}
	}
	sub := -1
	for i := range 250 {
		n := byte((os.Getpid() + i) % 250)
		if !inUse[[2]byte{201, n}] && !inUse[[2]byte{202, n}] {
			sub = int(n)
			break
		}
	}
	if sub < 0 {
		return nil, fmt.Errorf("10.201.0.0/16 and 10.202.0.0/16 are in use: demos were killed (ip netns list; ip link | grep nsc)")
	}
	dataNet, ctlNet := fmt.Sprintf("10.201.%d", sub), fmt.Sprintf("10.202.%d", sub)
	id := os.Getpid() % 100000
	netns := fmt.Sprintf("nsc-demo%d", id)
	data, ctl := fmt.Sprintf("nscd%da", id), fmt.Sprintf("nscc%da", id)
	n := &demoNet{lb: fmt.Sprintf("%s.1:%d", dataNet, lbPort), cpIP: ctlNet + ".1", hostIP: dataNet + ".2", syncIP: ctlNet + ".2", netns: netns, mtu: "1500"}
	n.cleanup = func() {
		exec.Command("ip", "link", "del", data).Run()
		exec.Command("ip", "link", "del", ctl).Run()
		exec.Command("ip", "netns", "del", netns).Run()
	}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	steps := [][]string{{"netns", "add", netns}}
	for _, p := range []struct{ dev, net string }{{data, dataNet}, {ctl, ctlNet}} {
		peer := strings.TrimSuffix(p.dev, "a") + "b"
		steps = append(steps, []string{"link", "add", p.dev, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", netns},
			[]string{"addr", "add", p.net + ".1/24", "dev", p.dev}, []string{"link", "set", p.dev, "up"},
			[]string{"-n", netns, "addr", "add", p.net + ".2/24", "dev", peer}, []string{"-n", netns, "link", "set", peer, "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			n.cleanup()
			return nil, err
		}
	}
	lbIf, err := net.InterfaceByName(data)
	if err != nil {
		n.cleanup()
		return nil, err
	}
	out, err := exec.Command("ip", "-n", netns, "-o", "link", "show", strings.TrimSuffix(data, "a")+"b").Output()
	peerMAC := regexp.MustCompile(`link/ether ([0-9a-f:]{17})`).FindSubmatch(out)
	if err != nil || peerMAC == nil {
		n.cleanup()
		return nil, fmt.Errorf("the MAC of the namespace's end: %v %q", err, out)
	}
	// The LB's MAC and broadcast (the senders' ARP); its address for
	// IPv4 and ARP. Members are the namespace's end of the veth.
	mac := strings.ReplaceAll(lbIf.HardwareAddr.String(), ":", "")
	lbIP := 0x0ac90001 | sub<<8 // 10.201.N.1
	n.tables = fmt.Sprintf("table_add mac_dst_filter_table set_mac_sa 0&&&0 0x%s => 0x%s 0\n"+
		"table_add mac_dst_filter_table set_mac_sa 0&&&0 0xffffffffffff => 0x%s 0\n"+
		"table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0800 %#x => %#x 0 0\n"+
		"table_add ip_dst_filter_table set_ip_sa 0&&&0 0x0806 %#x => %#x 0 0\n", mac, mac, mac, lbIP, lbIP, lbIP, lbIP)
	n.lbFlags = []string{"--xdp-dev", data, "--xdp-mode", "generic", "--member-mac", string(peerMAC[1]), "--data-ipv4", dataNet + ".1"}
	return n, nil
}

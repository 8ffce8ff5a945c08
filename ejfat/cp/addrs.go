package cp

import (
	"net/netip"
	"slices"
)

// replyAddrs are the data and sync addresses replies hand out. None is
// ever empty: E2SAR parses all four unconditionally (lbadm --overview
// aborts on an empty IPv6 string). udplbd2 takes them from its LB
// instances (data) and its listen addresses (sync); an address not
// configured here is derived from one that is (see addrsOf).
type replyAddrs struct {
	sync4, sync6, data4, data6 string
}

// addrsOf fills in what cfg leaves unset: the sync IPv6 address is the
// IPv4-mapped form of the sync IPv4 one (an IPv6 socket sending there
// reaches the IPv4 sync server); the data IPv4 address is the IPv4 of an
// IPv4-mapped data IPv6 address, else the sync IPv4 address (the CP's
// host, where its in-process LB runs); the data IPv6 address is the
// IPv4-mapped form of the data IPv4 one. cfg.SyncIPv4 is set (defaults).
func addrsOf(cfg *Config) replyAddrs {
	a := replyAddrs{sync4: cfg.SyncIPv4, sync6: cfg.SyncIPv6, data4: cfg.DataIPv4, data6: cfg.DataIPv6}
	if a.sync6 == "" {
		a.sync6 = mapped(a.sync4)
	}
	if a.data4 == "" {
		a.data4 = a.sync4
		if ip, err := netip.ParseAddr(a.data6); err == nil && ip.Is4In6() {
			a.data4 = ip.Unmap().String()
		}
	}
	if a.data6 == "" {
		a.data6 = mapped(a.data4)
	}
	return a
}

// mapped is the IPv4-mapped IPv6 form of IPv4 address v4 (v4 itself if
// it is not one).
func mapped(v4 string) string {
	ip, err := netip.ParseAddr(v4)
	if err != nil || !ip.Is4() {
		return v4
	}
	return netip.AddrFrom16(ip.As16()).String()
}

// privateNets are udplbd2's private ranges (is_private_ip): RFC 1918,
// shared (RFC 6598), link-local, documentation and benchmarking IPv4;
// unique-local, link-local and documentation IPv6.
var privateNets = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("2001:db8::/32"),
}

// memberPolicy refuses a receiver address the CP is configured to refuse
// (udplbd2's allow_loopback and allow_private, both off here by default).
func (c *CP) memberPolicy(addr string) error {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return invalid("Invalid IP address %q", addr)
	}
	ip = ip.Unmap()
	if c.cfg.DenyLoopback && ip.IsLoopback() {
		return invalid("Registration from loopback addresses is not allowed (%s)", addr)
	}
	if c.cfg.DenyPrivate && slices.ContainsFunc(privateNets, func(p netip.Prefix) bool { return p.Contains(ip) }) {
		return invalid("Registration from private IP addresses is not allowed (%s)", addr)
	}
	return nil
}

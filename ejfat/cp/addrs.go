package cp

import "net/netip"

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

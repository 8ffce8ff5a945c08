package xdp_test

import (
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/internal/xdptest"
	"github.com/gopacket/gopacket/layers"
)

// TestAbsentHeaderChecksum: a header checksum with RFC 768's zero rule
// (`@checksum(header, optional)`) verifies when it is zero and IPv4 is
// valid, as the interpreter has it.
func TestAbsentHeaderChecksum(t *testing.T) {
	m := testutil.ModelSource(t, `include "lib/inet.nsc"
header ipv4 @checksum(header, optional)
lpg L {
  node RxQueue { op input parse ethernet  port out -> V }
  node V { op checksum verify ipv4  port true -> C  port false -> Bad }
  node C { op checksum compute ipv4  port out -> TxQueue }
  node Bad { op drop "bad" }
  node TxQueue { op emit }
}`)
	g, _ := m.Graph("L")
	r, mach := pair(t, m, g, "")
	good := testutil.Serialize(t, testutil.Eth(layers.EthernetTypeIPv4), testutil.IPv4(17))
	zero := append([]byte(nil), good...)
	zero[24], zero[25] = 0, 0 // the IPv4 checksum
	bad := append([]byte(nil), good...)
	bad[24] ^= 1
	where := xdptest.Compare(t, r, mach, [][]byte{good, zero, bad})
	if where["drop Bad: bad"] != 1 {
		t.Errorf("outcomes %v: want only the wrong checksum dropped", where)
	}
}

package verify_test

import (
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/embed"
)

// A device that runs part of the router, and the host the rest: nsc
// verify runs the split system (the device's part, then the host on what
// it passes) against the LPG alone. A device whose punt transmitted
// instead would fail.
func TestSplitDevice(t *testing.T) {
	em := embedding(t, load(t, "testdata/device.nsc"), "Router", "SmallDevice")
	if em.Device == nil {
		t.Fatal("no split")
	}
	for _, n := range []string{"RxRoute", "RxDec"} {
		if p, _ := em.Placement(n); p.Kind != embed.Host {
			t.Errorf("%s: %+v", n, p)
		}
	}
	res := run(t, em, 10000)
	if len(res.Mismatches) > 0 {
		t.Errorf("%d mismatches; the first: %s", len(res.Mismatches), res.Mismatches[0])
	}
	if res.Hosted < 1000 {
		t.Errorf("only %d of %d packets went on to the host", res.Hosted, res.Cases)
	}
	// The liar: the device transmits what it should punt.
	em.Device.Node(embed.PuntNode).Host = false
	res = run(t, em, 10000)
	if res.Hosted != 0 || len(res.Mismatches) < 1000 {
		t.Fatalf("a device that transmits its punts: %d hosted, %d mismatches", res.Hosted, len(res.Mismatches))
	}
	if m := res.Mismatches[0].String(); !strings.Contains(m, `Where: "TxQueue"`) {
		t.Errorf("mismatch: %s", m)
	}
}

package verify_test

import (
	"os"
	"slices"
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/verify"
)

// TestCoverageOfAUserModel: on a GRE endpoint written as a user writes
// one (testdata/gre.nsc), verify's frames reach every node of the LPG,
// alone and embedded in XDP, with no mismatch. It takes two things: the
// headers the graph extracts where the library's parse graph ends (gre,
// inner_ipv4) are put in the frames, and, given the entries verify runs
// with, frames meant for a lookup's action port carry the keys of an
// entry of that action (a route, a firewall rule). Without entries the
// route's port stays unreached, and verify says so.
func TestCoverageOfAUserModel(t *testing.T) {
	em := embedding(t, load(t, "testdata/gre.nsc"), "GRETerm", "XDP")
	tables := func() ([]*table.Table, error) {
		f, err := os.Open("testdata/gre.tables")
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return table.Load(em.LPG.Schema, "gre.tables", f)
	}
	ts, err := tables()
	if err != nil {
		t.Fatal(err)
	}
	res, err := verify.RunTables(em, tables, verify.GenerateTables(em, 4000, 1, ts), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatches) > 0 || len(res.Unreached) > 0 {
		t.Errorf("with entries: %d mismatches, unreached %v; want none", len(res.Mismatches), res.Unreached)
	}
	res, err = verify.Run(em, verify.Generate(em, 4000, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var unreached []string
	for _, u := range res.Unreached {
		unreached = append(unreached, u.Node)
	}
	if len(res.Mismatches) > 0 || !slices.Contains(unreached, "Decap") || slices.Contains(unreached, "Firewall") {
		t.Errorf("without entries: %d mismatches, unreached %v; want Decap (no route) but the firewall reached", len(res.Mismatches), unreached)
	}
}

// TestCoverageOfAResponder: a ping and ARP responder whose tests compare
// wire fields with the address a table's default writes into metadata
// ("ipv4.dst == host.ip4"): frames meant to pass them carry a constant
// the graph writes, so every node is reached, with no mismatch.
func TestCoverageOfAResponder(t *testing.T) {
	em := embedding(t, load(t, "testdata/ping.nsc"), "Ping", "XDP")
	res, err := verify.Run(em, verify.Generate(em, 4000, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatches) > 0 || len(res.Unreached) > 0 {
		t.Errorf("%d mismatches, unreached %v; want none", len(res.Mismatches), res.Unreached)
	}
}

// TestClaimsReachTheirChecks: the packets verify makes to test what the
// reassembler embedded in the kernel's UDP socket (LinuxUDPRecv) takes on
// trust mostly reach the check they test. UDP's checksum is checked
// behind a length check that a UDP length drawn freely from 8..65535
// almost always fails (3 packets of 166 reached the check); the lengths
// are now mostly ones a frame backs.
func TestClaimsReachTheirChecks(t *testing.T) {
	em := testutil.Embedding(t, "Reassembler", "LinuxUDPRecv", "ejfat/reassembler.nsc", "ejfat/hosts.nsc")
	res, err := verify.Run(em, verify.Generate(em, 2000, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatches) > 0 || len(res.Claims) == 0 {
		t.Fatalf("%d mismatches, %d claims", len(res.Mismatches), len(res.Claims))
	}
	for _, c := range res.Claims {
		if c.Packets == 0 || c.Reached < c.Packets/2 {
			t.Errorf("%s: %d of %d packets reached it", c.Claim.Name(), c.Reached, c.Packets)
		}
	}
}

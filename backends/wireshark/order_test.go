package wireshark_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/internal/testutil"
)

// TestHeadersInTheOrderGiven: seed 000's packets carry LB v1 and then the
// EVIO6 segmentation header, which the LB model never parses; with
// --headers lbv1,evio6 the dissector shows EVIO6 after LB v1, as seed
// 000's hand-written dissector does (held to ejfat.EVIO6Seg).
func TestHeadersInTheOrderGiven(t *testing.T) {
	m := testutil.Model(t, "ejfat/lb-2021.nsc", "lib/ejfat-sender.nsc")
	const pcap = "../../ejfat/testdata/seed000-scapy.pcap"
	frames, err := pcapio.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"lbv1.Tick", "evio6.Version", "evio6.Flags", "evio6.ROC_ID", "evio6.Offset"}
	rows := dissectPcap(t, m, wireshark.Options{Headers: []string{"lbv1", "evio6"}}, data, len(frames), fields)
	shown := 0
	for i, f := range frames {
		_, payload, ok := udpPayload(f.Data)
		if !ok || len(payload) < ejfat.LBv1Len+8 {
			continue
		}
		ev := ejfat.EVIO6Seg(payload[ejfat.LBv1Len:])
		want := map[string]string{"evio6.Version": fmt.Sprint(ev.Version()), "evio6.Flags": fmt.Sprint(uint8(ev.Flags())),
			"evio6.ROC_ID": fmt.Sprint(ev.RocID()), "evio6.Offset": fmt.Sprint(ev.Offset())}
		for k, v := range want {
			if rows[i][k] != v {
				t.Errorf("frame %d: %s = %q, want %q", i+1, k, rows[i][k], v)
			}
		}
		shown++
	}
	if shown == 0 {
		t.Fatal("no frame of seed 000's pcap has LB v1 and EVIO6")
	}
	// Without the order, EVIO6 is not reached from LB v1.
	rows = dissectPcap(t, m, wireshark.Options{Headers: []string{"evio6", "lbv1"}}, data, len(frames), fields)
	for i, r := range rows {
		if r["evio6.ROC_ID"] != "" {
			t.Errorf("frame %d: evio6 shown though lbv1 follows it: %v", i+1, r)
		}
	}
}

package lbfast_test

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// TestTablesUpdatedWhileForwarding: the control plane replaces the member
// table while two pipelines forward (run with -race): every frame goes to
// the port of one of the two configurations, never anything else.
func TestTablesUpdatedWhileForwarding(t *testing.T) {
	script, err := os.ReadFile(tablesFile["lb-2026"])
	if err != nil {
		t.Fatal(err)
	}
	ts, err := lbfast.Tables("lb-2026", "lb-2026.tables", strings.NewReader(string(script)))
	if err != nil {
		t.Fatal(err)
	}
	var members *table.Table
	for _, tb := range ts {
		if tb.Spec().Name == "member_info_lookup_table" {
			members = tb
		}
	}
	a := members.Entries()
	b := make([]packet.Entry, len(a))
	for i, e := range a {
		b[i] = e
		b[i].Params = append([]packet.Value(nil), e.Params...)
		b[i].Params[2] = packet.V(40000) // udp_base
	}
	frame, _ := hex.DecodeString(v2Forward)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the control plane
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			es := a
			if i%2 == 1 {
				es = b
			}
			if err := members.Replace(es); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	ports := map[uint16]int{}
	var mu sync.Mutex
	var workers sync.WaitGroup
	for range 2 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			pl, err := lbfast.New("lb-2026", ts)
			if err != nil {
				t.Error(err)
				return
			}
			buf := make([]byte, 2*packet.Headroom+len(frame))
			seen := map[uint16]int{}
			for range 20000 {
				copy(buf[packet.Headroom:], frame)
				r := pl.Process(buf, packet.Headroom, len(frame))
				if r.Sink < 0 {
					t.Errorf("dropped at %v", pl.DropSite(int(r.Drop)))
					return
				}
				seen[binary.BigEndian.Uint16(r.Data[14+20+2:])]++
			}
			mu.Lock()
			for p, n := range seen {
				ports[p] += n
			}
			mu.Unlock()
		}()
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	for p := range ports {
		if p != 17751 && p != 40001 {
			t.Errorf("a frame went to port %d: %v", p, ports)
		}
	}
	t.Logf("ports: %v", ports)
}

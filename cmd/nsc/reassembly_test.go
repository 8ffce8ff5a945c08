package main

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/dragonet-go/nsc/internal/testutil"
)

// nsc sim on a capture of EJFAT segments, shuffled, writes the events the
// reassembler makes whole to its Deliver sink, one record each; the
// timeouts run on the capture's timestamps, so an event missing a segment
// is counted as timed out once the capture's clock passes 500 ms.
func TestSimReassembly(t *testing.T) {
	rnd := rand.New(rand.NewPCG(8, 13))
	var events [][]byte
	var segs []testutil.Segment
	for i := range 4 {
		data := make([]byte, 3000+rnd.IntN(20000))
		for j := range data {
			data[j] = byte(rnd.UintN(256))
		}
		ev := testutil.Event{Src: net.IP{10, 0, 0, byte(i)}, DataID: 4, Tick: uint64(i), Data: data}
		s := testutil.Segments(ev, 8000, 0)
		if i == 3 {
			s = s[1:] // lost: never whole
		} else {
			events = append(events, data)
		}
		segs = append(segs, s...)
	}
	rnd.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
	dir := t.TempDir()
	in := filepath.Join(dir, "segments.pcap")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	at := time.Unix(1700000000, 0)
	for _, s := range segs {
		fr := s.Frame(t)
		w.WritePacket(gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(fr), Length: len(fr)}, fr)
		at = at.Add(time.Millisecond)
	}
	// a frame a second later expires the lost event's entry
	late := testutil.Segments(testutil.Event{Src: net.IP{10, 0, 0, 9}, Data: []byte{1}}, 10, 0)[0].Frame(t)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: at.Add(time.Second), CaptureLength: len(late), Length: len(late)}, late)
	// and the capture ends with an event begun
	begun := testutil.Segments(testutil.Event{Src: net.IP{10, 0, 0, 9}, Tick: 1, Data: []byte{1, 2}}, 1, 0)[0].Frame(t)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: at.Add(time.Second), CaptureLength: len(begun), Length: len(begun)}, begun)
	f.Close()

	out := filepath.Join(dir, "out")
	code, stdout, stderr := nsc(t, "sim", "models/ejfat/reassembler.nsc", "--graph", "Reassembler", "--in", in, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readSinkPcap(t, filepath.Join(out, "Deliver.pcap"))
	want := append(events, []byte{1})
	slices.SortFunc(got, bytes.Compare)
	slices.SortFunc(want, bytes.Compare)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered events (-want +got):\n%s", diff)
	}
	counts := map[string]int{}
	for _, l := range strings.Split(stdout, "\n") {
		if fs := strings.Fields(l); len(fs) >= 3 && (fs[0] == "sink" || fs[0] == "drop" || fs[0] == "state") {
			counts[strings.Join(append(fs[:2:2], fs[3:]...), " ")] = atoi(fs[2]) // the line without its count
		}
	}
	wantCounts := map[string]int{
		"sink Deliver -> " + filepath.Join(out, "Deliver.pcap"): len(want),
		"drop Stored (stored)":       len(segs) - len(events) + 1,
		"drop events (timeout)":      1,
		"state events (in progress)": 1,
	}
	if diff := cmp.Diff(wantCounts, counts); diff != "" {
		t.Errorf("counters (-want +got):\n%s\n%s", diff, stdout)
	}
	// The generated fast path, on the capture's clock too: the same.
	tempRunCache(t)
	runOut := filepath.Join(dir, "run")
	code, runStdout, stderr := nsc(t, "run", "models/ejfat/reassembler.nsc", "--lpg", "Reassembler", "--in", in, "--out", runOut)
	if code != exitOK {
		t.Fatalf("nsc run: exit %d: %s", code, stderr)
	}
	if diff := cmp.Diff(stdout, strings.ReplaceAll(runStdout, runOut, out)); diff != "" {
		t.Errorf("nsc run's counters (-sim +run):\n%s", diff)
	}
	if diff := cmp.Diff(sinkFiles(t, out), sinkFiles(t, runOut)); diff != "" {
		t.Errorf("nsc run's sinks (-sim +run):\n%s", diff)
	}
}

// TestSimHintsAtLBHeaders: nsc sim on the reassembler with segments that
// still carry the LB header says so and names the table entry; with that
// entry, every event is delivered.
func TestSimHintsAtLBHeaders(t *testing.T) {
	dir := t.TempDir()
	pcap := filepath.Join(dir, "seg.pcap")
	if code, _, stderr := nsc(t, "send", "--to", "127.0.0.1:19000", "--events", "3", "--size", "20000", "--pcap", pcap); code != exitOK {
		t.Fatal(stderr)
	}
	sim := []string{"sim", "models/ejfat/reassembler.nsc", "--graph", "Reassembler", "--in", pcap, "--out", filepath.Join(dir, "out")}
	code, _, stderr := nsc(t, sim...)
	entry := "table_add data_ports keep_lb 19000->19000 => 1"
	if code != exitOK || !strings.Contains(stderr, "nsc sim: hint: 9 of 9 frames carry an EJFAT LB header") || !strings.Contains(stderr, entry) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	tables := filepath.Join(dir, "t.tables")
	os.WriteFile(tables, []byte(entry+"\n"), 0o644)
	code, out, stderr := nsc(t, append(sim, "--tables", tables)...)
	if code != exitOK || stderr != "" || !strings.Contains(out, "sink Deliver                       3") {
		t.Errorf("with the hinted entry: exit %d\n%s%s", code, out, stderr)
	}
}

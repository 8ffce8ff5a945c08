package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// decode parses a command's --json output with encoding/json alone.
func decode(t *testing.T, what, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s --json: %v\n%s", what, err, out)
	}
	return m
}

// numbers are the numbers re's groups find in text, by group name.
func numbers(t *testing.T, re, text string) map[string]float64 {
	t.Helper()
	r := regexp.MustCompile(re)
	m := r.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %q in\n%s", re, text)
	}
	got := map[string]float64{}
	for i, name := range r.SubexpNames() {
		if name != "" && m[i] != "" {
			got[name], _ = strconv.ParseFloat(m[i], 64)
		}
	}
	return got
}

// sameNumbers checks that the JSON fields named like the text's groups
// hold the text's numbers.
func sameNumbers(t *testing.T, what string, j map[string]any, text map[string]float64) {
	t.Helper()
	for k, v := range text {
		if got, ok := j[k].(float64); !ok || got != v {
			t.Errorf("%s: JSON %s = %v, text says %v", what, k, j[k], v)
		}
	}
}

// counterLines are the sink and drop lines of sim's and run's text, as
// "sink NODE N" and "drop NODE REASON N".
func counterLines(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  sink (\S+)\s+(\d+)  ->`).FindAllStringSubmatch(text, -1) {
		out = append(out, "sink "+m[1]+" "+m[2])
	}
	for _, m := range regexp.MustCompile(`(?m)^  drop (\S+)\s+(\d+)  \((.*)\)$`).FindAllStringSubmatch(text, -1) {
		out = append(out, "drop "+m[1]+" "+m[3]+" "+m[2])
	}
	return out
}

func counterEntries(j map[string]any) []string {
	var out []string
	for _, s := range j["sinks"].([]any) {
		s := s.(map[string]any)
		out = append(out, fmt.Sprintf("sink %s %v", s["node"], s["packets"]))
	}
	for _, d := range j["drops"].([]any) {
		d := d.(map[string]any)
		out = append(out, fmt.Sprintf("drop %s %s %v", d["node"], d["reason"], d["packets"]))
	}
	return out
}

func TestJSONMatchesText(t *testing.T) {
	dir := t.TempDir()
	both := func(args ...string) (text, js string) {
		t.Helper()
		code, text, stderr := nsc(t, args...)
		if code != exitOK {
			t.Fatalf("nsc %v: exit %d: %s", args, code, stderr)
		}
		code, js, stderr = nsc(t, append(args, "--json")...)
		if code != exitOK {
			t.Fatalf("nsc %v --json: exit %d: %s", args, code, stderr)
		}
		return text, js
	}
	seed := []string{"--tables", "ejfat/testdata/seed000.tables", "--in", "ejfat/testdata/seed000-scapy.pcap"}
	for _, args := range [][]string{
		append([]string{"sim", "models/ejfat/lb-2021.nsc", "--graph", "LB2021", "--out", filepath.Join(dir, "sim")}, seed...),
		append([]string{"run", "--lb", "lb-2021", "--out", filepath.Join(dir, "run.pcap")}, seed...),
	} {
		text, js := both(args...)
		j := decode(t, args[0], js)
		sameNumbers(t, args[0], j, numbers(t, `^(?P<packets>\d+) packets in`, text))
		if got, want := counterEntries(j), counterLines(text); fmt.Sprint(got) != fmt.Sprint(want) || len(want) == 0 {
			t.Errorf("%s: JSON %v, text %v", args[0], got, want)
		}
	}

	for _, args := range [][]string{
		{"verify", "models/inet/offload.nsc", "--lpg", "UDPIPv4", "--prg", "I82599", "--packets", "500"},
		{"verify", "verify/testdata/gre.nsc", "--lpg", "GRETerm", "--prg", "XDP", "--packets", "500"}, // nodes unreached without entries
	} {
		text, js := both(args...)
		verifyJSONAsText(t, text, js)
	}

	pcap := filepath.Join(dir, "send.pcap")
	code, text, stderr := nsc(t, "send", "--to", "127.0.0.1:19522", "--events", "7", "--size", "20000", "--pcap", pcap)
	if code != exitOK {
		t.Fatal(stderr)
	}
	_, js, _ := nsc(t, "send", "--to", "127.0.0.1:19522", "--events", "7", "--size", "20000", "--pcap", filepath.Join(dir, "send2.pcap"), "--json")
	j := decode(t, "send", js)
	sameNumbers(t, "send", j, numbers(t, `^wrote (?P<events>\d+) events, (?P<segments>\d+) segments, (?P<bytes>\d+) bytes to `, text))
	if _, ok := j["gbps"]; ok || j["pcap"] != filepath.Join(dir, "send2.pcap") {
		t.Errorf("send --pcap --json: %v", j)
	}

	// recv and lb print the text to stderr beside the JSON: one run has both.
	code, js, text = nsc(t, "recv", "--in", pcap, "--verify", "--json")
	if code != exitOK {
		t.Fatal(text)
	}
	j = decode(t, "recv", js)
	sameNumbers(t, "recv", j, numbers(t, `(?P<received>\d+) events received, (?P<reassembled>\d+) reassembled, (?P<errors>\d+) errors \((?P<timed_out>\d+) timed out, (?P<evicted>\d+) evicted\), (?P<dequeued>\d+) dequeued, (?P<enqueue_errors>\d+) enqueue errors\n(?P<packets>\d+) packets, (?P<bytes>\d+) bytes, (?P<lb_headers>\d+) with an LB header, (?P<skipped>\d+) skipped\n(?P<delivered>\d+) events delivered, (?P<delivered_bytes>\d+) bytes.*(?P<verified>\d+) verified, (?P<bad>\d+) bad`, text))
	if j["delivered"] != 7.0 {
		t.Errorf("recv: %v events delivered, want 7", j["delivered"])
	}

	tables, _ := filepath.Abs("../../ejfat/testdata/lb-2025.tables")
	lb := startNSC(t, "lb", "--lb", "lb-2025", "--tables", tables, "--listen", "127.0.0.1:0", "--workers", "1", "--json")
	addr := strings.Fields(lb.expect(t, lb.stderr, "forwarding on"))[3]
	if code, _, stderr := nsc(t, "send", "--to", addr, "--events", "3", "--size", "3000"); code != exitOK {
		t.Fatal(stderr)
	}
	time.Sleep(200 * time.Millisecond) // the datagrams cross loopback
	code, out := lb.stop(t, os.Interrupt)
	if code != 0 {
		t.Fatalf("nsc lb: exit %d", code)
	}
	_, lines := lb.waitExit(t)
	lb.mu.Lock()
	text = strings.Join(lb.errOut, "\n")
	lb.mu.Unlock()
	j = decode(t, "lb", strings.Join(lines, "\n"))
	sameNumbers(t, "lb", j, numbers(t, `(?P<received>\d+) received, (?P<forwarded>\d+) forwarded, (?P<dropped>\d+) dropped, (?P<oversize>\d+) oversize, (?P<send_errors>\d+) send errors`, text))
	if j["received"] == 0.0 || out != "}" {
		t.Errorf("lb received nothing, or its JSON is not last on stdout: %s", text)
	}
}

// verifyJSONAsText checks nsc verify's JSON against its text: the
// counts, the claims and the nodes not covered.
func verifyJSONAsText(t *testing.T, text, js string) {
	t.Helper()
	j := decode(t, "verify", js)
	sameNumbers(t, "verify", j, numbers(t, `: (?P<packets>\d+) packets \((?P<classes>\d+) from predicate classes, (?P<claimed>\d+) lacking what a claim says, (?P<random>\d+) random or malformed\), (?P<mismatches>\d+) mismatches`, text))
	unreached := 0
	if m := regexp.MustCompile(`\n  (\d+) LPG nodes not covered`).FindStringSubmatch(text); m != nil {
		unreached, _ = strconv.Atoi(m[1])
	}
	if n := strings.Count(text, "\n  ") - strings.Count(text, "\n    ") - min(unreached, 1); n != len(j["claims"].([]any)) {
		t.Errorf("verify: %d claims in the text, %d in JSON", n, len(j["claims"].([]any)))
	}
	if n := len(j["unreached"].([]any)); n != unreached {
		t.Errorf("verify: %d nodes not covered in the text, %d in JSON", unreached, n)
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dragonet-go/nsc/backends/wireshark"
	"github.com/dragonet-go/nsc/ejfat"
)

// The story's decisions: member 0 for both transfers, tick 11 dropped.
func TestStory(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	if err := run(&out, dir, "../../ejfat/testdata/seed000.tables"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if n := strings.Count(text, "tick 10  -> member 11:22:33:44:55:66 at 170.187.204.221 port 17750"); n != 11 {
		t.Errorf("%d IPv4 events to member 0, want 11:\n%s", n, text)
	}
	if n := strings.Count(text, "tick 20  -> member 11:22:33:44:55:66 at fe80::3 port 17750"); n != 11 {
		t.Errorf("%d IPv6 events to member 0, want 11:\n%s", n, text)
	}
	if !strings.Contains(text, "event 23  tick 11  dropped at RxCalendarMiss (calendar miss)") {
		t.Errorf("the event with an empty calendar slot is not dropped:\n%s", text)
	}
	for _, f := range []string{"packets_in.pcap", "packets_out.pcap"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// Every command of the README prints what the README shows, with
// /tmp/ejfat-lb replaced by a temporary directory.
func TestReadmeIsTrue(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH; cannot build nsc to check the README")
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is not installed; CI must install it")
		}
		t.Log("tshark is not installed: its README commands are not checked")
	}
	bin := t.TempDir()
	for _, b := range [][2]string{{"nsc", "./cmd/nsc"}, {"ejfat-lb", "./examples/ejfat-lb"}} {
		build := exec.Command(goBin, "build", "-o", filepath.Join(bin, b[0]), b[1])
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b[1], err, out)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fences := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	ran := 0
	for i, f := range fences {
		if f[1] != "sh" {
			continue
		}
		cmdline := strings.TrimSpace(f[2])
		if strings.Contains(cmdline, "\n") || i+1 == len(fences) || fences[i+1][1] != "text" {
			t.Fatalf("README.md: %q must be one command followed by a ```text block with its output", cmdline)
		}
		args := strings.Fields(strings.ReplaceAll(cmdline, "/tmp/ejfat-lb", dir))
		var cmd *exec.Cmd
		switch {
		case strings.HasPrefix(cmdline, "go run ./cmd/nsc "):
			cmd = exec.Command(filepath.Join(bin, "nsc"), args[3:]...)
		case strings.HasPrefix(cmdline, "go run ./examples/ejfat-lb "):
			cmd = exec.Command(filepath.Join(bin, "ejfat-lb"), args[3:]...)
		case strings.HasPrefix(cmdline, "tshark "):
			if tshark == "" {
				continue
			}
			cmd = exec.Command(tshark, args[1:]...)
		default:
			t.Fatalf("README.md: unknown command %q", cmdline)
		}
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", cmdline, err)
		}
		want := strings.ReplaceAll(fences[i+1][2], "/tmp/ejfat-lb", dir)
		if string(out) != want {
			t.Errorf("%s prints\n%s\nbut README.md shows\n%s", cmdline, out, want)
		}
		ran++
	}
	if ran < 2 {
		t.Errorf("ran %d README commands", ran)
	}
}

// udplb.lua is what `nsc dissector` makes of the 2021 model today.
func TestDissectorIsFresh(t *testing.T) {
	const command = "nsc dissector models/ejfat/lb-2021.nsc -o examples/ejfat-lb/udplb.lua"
	m, err := ejfat.Model("lb-2021")
	if err != nil {
		t.Fatal(err)
	}
	want, err := wireshark.Generate(m, wireshark.Options{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("udplb.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("udplb.lua is stale: run go run ./cmd/%s", command)
	}
}

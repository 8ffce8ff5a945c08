package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nsc lbctl against a real nsc cp: reserve, register with the
// reservation's token, send state with the session's, read it back in the
// status, make a child token, free; a bad token and bad arguments are
// refused.
func TestLBCtl(t *testing.T) {
	dir := t.TempDir()
	p := startCPProcess(t, buildNSC(t), dir, 2)
	admin := adminToken(t, dir)
	ctl := func(token string, args ...string) (int, string, string) {
		return nsc(t, append([]string{"lbctl", "--cp", p.addr, "--token", token}, args...)...)
	}
	decode := func(out string, v any) {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	code, out, stderr := ctl(admin, "reserve", "demo", "--sender", "127.0.0.1", "--until", "1h")
	if code != 0 {
		t.Fatalf("reserve: exit %d: %s", code, stderr)
	}
	var res struct{ Token, LbId string }
	decode(out, &res)
	if res.LbId == "" || res.Token == "" {
		t.Fatalf("reserve printed %s", out)
	}
	code, out, stderr = ctl(res.Token, "register", res.LbId, "--name", "r1", "--ip", "127.0.0.1", "--port", "19000", "--port-range", "1", "--weight", "2")
	if code != 0 {
		t.Fatalf("register: exit %d: %s", code, stderr)
	}
	var reg struct{ Token, SessionId string }
	decode(out, &reg)
	if code, _, stderr = ctl(reg.Token, "send-state", res.LbId, reg.SessionId, "--fill", "0.25", "--control", "0.5"); code != 0 {
		t.Fatalf("send-state: exit %d: %s", code, stderr)
	}
	code, out, stderr = ctl(admin, "status", res.LbId)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	var st struct {
		Workers []struct {
			Name        string
			FillPercent float64
			UdpPort     int
		}
	}
	decode(out, &st)
	if len(st.Workers) != 1 || st.Workers[0].Name != "r1" || st.Workers[0].FillPercent != 0.25 || st.Workers[0].UdpPort != 19000 {
		t.Errorf("status workers %+v", st.Workers)
	}
	if code, out, stderr = ctl(admin, "token", "child", "--perm", "RESERVATION:"+res.LbId+":READ_ONLY"); code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("token: exit %d: %s %s", code, out, stderr)
	}
	// A fill outside 0..1 is the server's InvalidArgument; an unknown
	// token holds nothing, so its call is PermissionDenied (as udplbd2);
	// both exit non-zero and say so.
	if code, _, stderr = ctl(reg.Token, "send-state", res.LbId, reg.SessionId, "--fill", "1.5"); code == 0 || !strings.Contains(stderr, "InvalidArgument") {
		t.Errorf("fill 1.5: exit %d: %s", code, stderr)
	}
	if code, _, stderr = ctl("nope", "overview"); code == 0 || !strings.Contains(stderr, "PermissionDenied") {
		t.Errorf("bad token: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"free"}, {"fly"}, {"token", "x", "--perm", "LB:1:READ"}, {"register", res.LbId, "--port-range", "15"}} {
		if code, _, _ := ctl(admin, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, stderr = ctl(admin, "free", res.LbId); code != 0 {
		t.Fatalf("free: exit %d: %s", code, stderr)
	}
	if code, _, stderr = ctl(admin, "status", res.LbId); code == 0 || !strings.Contains(stderr, "NotFound") {
		t.Errorf("status after free: exit %d: %s", code, stderr)
	}
}

// nsc recv --cp registers its ports with a reservation, sends its state
// while it runs (the control plane shows the worker, its port range and a
// fresh update), and deregisters when it stops.
func TestRecvRegistersWithCP(t *testing.T) {
	dir := t.TempDir()
	p := startCPProcess(t, buildNSC(t), dir, 1)
	admin := adminToken(t, dir)
	code, out, stderr := nsc(t, "lbctl", "--cp", p.addr, "--token", admin, "reserve", "r")
	if code != 0 {
		t.Fatalf("reserve: %s", stderr)
	}
	var res struct{ Token, LbId string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	recv := startNSC(t, "recv", "--listen", "127.0.0.1:0", "--ports", "4", "--cp", p.addr, "--token", res.Token,
		"--lb", res.LbId, "--name", "rx1", "--kp", "1")
	recv.expect(t, recv.stdout, "registered with "+p.addr)
	var st struct {
		Workers []struct {
			Name          string
			PortRange     string
			ControlSignal float64
			LastUpdated   string
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, out, _ = nsc(t, "lbctl", "--cp", p.addr, "--token", admin, "status", res.LbId)
		st.Workers = nil
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		// With an empty queue and set point 0.5, kp 1 makes 0.5.
		if len(st.Workers) == 1 && st.Workers[0].ControlSignal == 0.5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no state from rx1: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := st.Workers[0]; w.Name != "rx1" || w.PortRange != "PORT_RANGE_4" {
		t.Errorf("worker %+v", w)
	}
	if code, _ := recv.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("recv exit %d", code)
	}
	_, out, _ = nsc(t, "lbctl", "--cp", p.addr, "--token", admin, "status", res.LbId)
	st.Workers = nil
	json.Unmarshal([]byte(out), &st)
	if len(st.Workers) != 0 {
		t.Errorf("still registered after recv stopped: %s", out)
	}
}

package main

import (
	"strings"
	"testing"
)

func TestDissector(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		want, lack string
	}{
		{[]string{"dissector", "models/ejfat/lb-2025.nsc"}, 0, `udp_port:add("16384-32767", h_lb_common.proto)`, ""},
		{[]string{"dissector", "models/ejfat/lb-2025.nsc", "--headers", "lb_common"}, 0, "lb_v2 follows; not dissected here", `Proto("lb_v2"`},
		{[]string{"dissector", "models/ejfat/lb-2025.nsc", "--headers", "nope"}, 1, "the model has no header nope", ""},
		{[]string{"dissector", "models/ejfat/lb-2025.nsc", "--headers", "meta"}, 1, "meta is metadata", ""},
		{[]string{"dissector", "models/ejfat/lb-2025.nsc", "--headers", "lb_v2, udp"}, 1, "Wireshark dissects udp itself", ""},
		{[]string{"dissector", "models/inet/udp.nsc"}, 1, "name the headers with --headers", ""},
		{[]string{"dissector"}, 2, "no model file given", ""},
	} {
		code, stdout, stderr := nsc(t, c.args...)
		out := stdout + stderr
		if code != c.code || !strings.Contains(out, c.want) || c.lack != "" && strings.Contains(out, c.lack) {
			t.Errorf("nsc %s: exit %d, want %d with %q and without %q:\n%s", strings.Join(c.args, " "), code, c.code, c.want, c.lack, out)
		}
	}
}

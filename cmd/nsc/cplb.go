package main

import (
	"flag"
	"net"
	"os"
	"runtime"

	"github.com/dragonet-go/nsc/ejfat/cp"
)

// cpLBFlags choose the data plane nsc cp programs: an in-process nsc lb.
type cpLBFlags struct {
	listen, model, tables, mac, memberMAC string
}

func (f *cpLBFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "lb-listen", "", "run an in-process LB (as nsc lb) on this UDP address and program it")
	fs.StringVar(&f.model, "lb-model", "lb-2025", "the LB model whose tables are programmed")
	fs.StringVar(&f.tables, "lb-tables", "", "table_add script of the entries the CP does not write (MAC and address filters, allowed sources); required with --lb-listen")
	fs.StringVar(&f.mac, "lb-mac", "", "the LB's MAC (default: from the MAC filter entries of --lb-tables)")
	fs.StringVar(&f.memberMAC, "member-mac", "00:00:00:00:00:00", "the Ethernet destination written for every member")
}

// check validates the flags; the data plane is off without --lb-listen.
func (f *cpLBFlags) check() error {
	if f.listen == "" {
		return nil
	}
	if f.tables == "" {
		return usagef("--lb-listen needs --lb-tables")
	}
	if _, err := net.ParseMAC(f.memberMAC); err != nil {
		return usagef("--member-mac: %v", err)
	}
	if f.mac != "" {
		if _, err := net.ParseMAC(f.mac); err != nil {
			return usagef("--lb-mac: %v", err)
		}
	}
	if _, err := net.ResolveUDPAddr("udp", f.listen); err != nil {
		return usagef("--lb-listen: %v", err)
	}
	return nil
}

// start opens the in-process LB; nil without --lb-listen. The caller runs
// and closes it.
func (f *cpLBFlags) start() (*cp.GoLB, error) {
	if f.listen == "" {
		return nil, nil
	}
	cfg := cp.GoLBConfig{Model: f.model, Workers: runtime.NumCPU(), BaseName: f.tables}
	cfg.Listen, _ = net.ResolveUDPAddr("udp", f.listen) // checked
	cfg.MAC, _ = net.ParseMAC(f.mac)
	mac, _ := net.ParseMAC(f.memberMAC)
	copy(cfg.MemberMAC[:], mac)
	r, err := os.Open(f.tables)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cfg.Base = r
	return cp.NewGoLB(cfg)
}

package main

import (
	"flag"
	"io"
	"net"
	"os"
	"runtime"

	"github.com/dragonet-go/nsc/ejfat/cp"
)

// cpLBFlags choose the data plane nsc cp programs: an in-process nsc lb,
// or BMv2 through a script of simple_switch_CLI commands.
type cpLBFlags struct {
	listen, model, tables, mac, memberMAC, p4Script string
}

func (f *cpLBFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "lb-listen", "", "run an in-process LB (as nsc lb) on this UDP address and program it")
	fs.StringVar(&f.model, "lb-model", "lb-2025", "the LB model whose tables are programmed")
	fs.StringVar(&f.tables, "lb-tables", "", "table_add script of the entries the CP does not write (MAC and address filters, allowed sources); required with --lb-listen")
	fs.StringVar(&f.mac, "lb-mac", "", "the LB's MAC (default: from the MAC filter entries of --lb-tables)")
	fs.StringVar(&f.memberMAC, "member-mac", "00:00:00:00:00:00", "the Ethernet destination written for every member")
	fs.StringVar(&f.p4Script, "p4-script", "", "append each epoch's table changes to this file (- for stdout) as simple_switch_CLI commands for the model's BMv2 program")
}

// check validates the flags; the data plane is off without --lb-listen
// or --p4-script.
func (f *cpLBFlags) check() error {
	if _, err := net.ParseMAC(f.memberMAC); err != nil {
		return usagef("--member-mac: %v", err)
	}
	switch {
	case f.listen != "" && f.p4Script != "":
		return usagef("--lb-listen and --p4-script: choose one data plane")
	case f.listen == "":
		return nil
	case f.tables == "":
		return usagef("--lb-listen needs --lb-tables")
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
	cfg.MemberMAC = f.member()
	r, err := os.Open(f.tables)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cfg.Base = r
	return cp.NewGoLB(cfg)
}

// member is --member-mac (checked).
func (f *cpLBFlags) member() (m [6]byte) {
	mac, _ := net.ParseMAC(f.memberMAC)
	copy(m[:], mac)
	return m
}

// p4 returns the Programming of --p4-script and the file to close; none
// without it.
func (f *cpLBFlags) p4(stdout io.Writer) (cp.Programming, io.Closer, error) {
	if f.p4Script == "" {
		return cp.Programming{}, nil, nil
	}
	prog, tables, err := cp.P4Program(f.model)
	if err != nil {
		return cp.Programming{}, nil, err
	}
	out, closer := stdout, io.Closer(nil)
	if f.p4Script != "-" {
		file, err := os.OpenFile(f.p4Script, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return cp.Programming{}, nil, err
		}
		out, closer = file, file
	}
	return cp.Programming{DataPlane: &cp.P4Script{Program: prog, Out: out}, Tables: tables, MemberMAC: f.member()}, closer, nil
}

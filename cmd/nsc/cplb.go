package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/cilium/ebpf/link"

	"github.com/dragonet-go/nsc/backends/p4"
	"github.com/dragonet-go/nsc/backends/xdp"
	"github.com/dragonet-go/nsc/backends/xdp/xdprun"
	"github.com/dragonet-go/nsc/ejfat"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
)

// cpLBFlags choose the data planes nsc cp programs, any of: an
// in-process nsc lb, the model's XDP program on an interface, BMv2
// through a script of simple_switch_CLI commands.
type cpLBFlags struct {
	listen, model, tables, mac, memberMAC, p4Script string
	xdpDev, xdpObj, xdpMode, xdpPinned              string
	feed                                            bool
}

func (f *cpLBFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "lb-listen", "", "run an in-process LB (as nsc lb) on this UDP address and program it")
	fs.StringVar(&f.model, "lb-model", "lb-2025", "the LB model whose tables are programmed")
	fs.StringVar(&f.tables, "lb-tables", "", "table_add script of the entries the CP does not write (MAC and address filters, allowed sources); required with --lb-listen")
	fs.StringVar(&f.mac, "lb-mac", "", "the LB's MAC (default: from the MAC filter entries of --lb-tables)")
	fs.StringVar(&f.memberMAC, "member-mac", "00:00:00:00:00:00", "the Ethernet destination written for every member")
	fs.StringVar(&f.p4Script, "p4-script", "", "append each epoch's table changes to this file (- for stdout) as simple_switch_CLI commands for the model's BMv2 program")
	fs.BoolVar(&f.feed, "lb-feed", false, "serve the tables on --http's /tables (admin token) for LBs in other processes (nsc lb --cp)")
	fs.StringVar(&f.xdpDev, "xdp-dev", "", "attach the model's XDP program to this interface and program its maps")
	fs.StringVar(&f.xdpObj, "xdp-obj", "", "the XDP program (nsc compile --target xdp; default: compiled now with clang)")
	fs.StringVar(&f.xdpMode, "xdp-mode", "", "XDP mode: driver, generic or offload (default: driver if the driver has it, else generic)")
	fs.StringVar(&f.xdpPinned, "xdp-pinned", "", "program the maps of the model's XDP program that nsc xdp attach --pin pinned in this directory")
}

// check validates the flags; the data plane is off without --lb-listen,
// --xdp-dev, --xdp-pinned or --p4-script.
func (f *cpLBFlags) check() error {
	if _, err := net.ParseMAC(f.memberMAC); err != nil {
		return usagef("--member-mac: %v", err)
	}
	if _, ok := xdpModes[f.xdpMode]; !ok {
		return usagef("unknown --xdp-mode %q (have driver, generic, offload)", f.xdpMode)
	}
	switch {
	case f.xdpPinned != "" && (f.xdpDev != "" || f.xdpObj != "" || f.xdpMode != ""):
		return usagef("--xdp-pinned takes the program nsc xdp attach --pin attached: no --xdp-dev, --xdp-obj or --xdp-mode")
	case f.xdpDev != "" && f.tables == "":
		return usagef("--xdp-dev needs --lb-tables")
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

// p4 returns the Programming of --p4-script and the file to close (nil
// for stdout).
func (f *cpLBFlags) p4(stdout io.Writer) (cp.Programming, io.Closer, error) {
	m, em, err := ejfat.Embedding(f.model, "BMv2")
	if err != nil {
		return cp.Programming{}, nil, err
	}
	prog, err := p4.Generate(em.Graph, p4.Options{Arch: p4.V1Model, Name: strings.ToLower(em.LPG.Name), PRG: em.PRG.Name, Limits: em.PRG.Limits})
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
	return cp.Programming{DataPlane: &cp.P4Script{Tables: prog.Tables, Out: out}, Tables: m.Schema.TableSpec, MemberMAC: f.member()}, closer, nil
}

var xdpModes = map[string]link.XDPAttachFlags{"": 0, "driver": link.XDPDriverMode, "generic": link.XDPGenericMode, "offload": link.XDPOffloadMode}

// xdp returns the Programming that changes the maps of the model's XDP
// program live, and what closes it: the program --xdp-pinned names, or
// one it attaches to --xdp-dev (xdpAttach).
func (f *cpLBFlags) xdp() (cp.Programming, io.Closer, error) {
	var r *xdprun.Runner
	var closer io.Closer
	var err error
	if f.xdpPinned != "" {
		var lock *os.File
		r, lock, err = f.xdpOpenPinned()
		closer = closerFunc(func() error { r.Close(); return lock.Close() })
	} else {
		r, closer, err = f.xdpAttach()
	}
	if err != nil {
		return cp.Programming{}, nil, err
	}
	live := r.Live()
	if err := live.Own(calendar.EpochTable); err != nil {
		closer.Close()
		return cp.Programming{}, nil, err
	}
	return cp.Programming{DataPlane: &cp.XDPMaps{Live: live}, Tables: cp.XDPTables(r), MemberMAC: f.member()}, closer, nil
}

// xdpOpenPinned opens the program pinned in --xdp-pinned, refusing one
// whose tables are not laid out as the model's XDP program's, and one
// that another live process drives (xdprun.LockPinned: the lock, closed
// last, is held while the CP runs).
func (f *cpLBFlags) xdpOpenPinned() (*xdprun.Runner, *os.File, error) {
	want, err := lbXDP(f.model)
	if err != nil {
		return nil, nil, err
	}
	if err := xdprun.OnBPFFS(f.xdpPinned); err != nil {
		return nil, nil, err
	}
	lock, err := xdprun.LockPinned(f.xdpPinned)
	if err != nil {
		return nil, nil, err
	}
	r, err := xdprun.OpenPinned(f.xdpPinned)
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	if err := want.Meta.SameTables(r.Meta); err != nil {
		r.Close()
		lock.Close()
		return nil, nil, fmt.Errorf("%s: the pinned program is not %s's XDP program: %w", f.xdpPinned, f.model, err)
	}
	return r, lock, nil
}

// xdpAttach loads the model's XDP program (--xdp-obj, or compiled now),
// fills its maps with --lb-tables and attaches it to --xdp-dev; closing
// detaches and unloads it.
func (f *cpLBFlags) xdpAttach() (*xdprun.Runner, io.Closer, error) {
	obj := f.xdpObj
	if obj == "" {
		dir, err := os.MkdirTemp("", "nsc-cp-xdp")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(dir)
		if obj, err = buildLBXDP(f.model, dir); err != nil {
			return nil, nil, err
		}
	}
	r, err := loadXDP(obj, f.tables)
	if err != nil {
		return nil, nil, err
	}
	l, err := r.Attach(f.xdpDev, xdpModes[f.xdpMode])
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("attach to %s: %w", f.xdpDev, err)
	}
	return r, closerFunc(func() error {
		err := l.Close()
		r.Close()
		return err
	}), nil
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

// open starts the data planes the flags name (the in-process LB's, to
// run, too) and returns the Programming that drives them all, and what to
// close when the CP ends.
func (f *cpLBFlags) open(stdout io.Writer) (cp.Programming, *cp.GoLB, []io.Closer, error) {
	var planes []cp.Programming
	var closers []io.Closer
	fail := func(err error) (cp.Programming, *cp.GoLB, []io.Closer, error) {
		for _, c := range closers {
			c.Close()
		}
		return cp.Programming{}, nil, nil, err
	}
	golb, err := f.start()
	if err != nil {
		return fail(err)
	}
	if golb != nil {
		closers = append(closers, closerFunc(func() error { golb.Close(); return nil }))
		planes = append(planes, golb.Programming)
	}
	for _, p := range []struct {
		on   bool
		open func() (cp.Programming, io.Closer, error)
	}{{f.xdpDev != "" || f.xdpPinned != "", f.xdp}, {f.p4Script != "", func() (cp.Programming, io.Closer, error) { return f.p4(stdout) }}} {
		if !p.on {
			continue
		}
		prog, c, err := p.open()
		if err != nil {
			return fail(err)
		}
		if c != nil {
			closers = append(closers, c)
		}
		planes = append(planes, prog)
	}
	switch len(planes) {
	case 0:
		if !f.feed {
			return cp.Programming{}, nil, nil, nil
		}
		tables, err := cp.ModelTables(f.model)
		return cp.Programming{Tables: tables, MemberMAC: f.member()}, nil, nil, err
	case 1:
		return planes[0], golb, closers, nil
	}
	all := &cp.DataPlanes{}
	for _, p := range planes {
		all.Planes = append(all.Planes, p.DataPlane)
	}
	prog := planes[0]
	prog.DataPlane = all
	return prog, golb, closers, nil
}

// lbXDP generates an LB model's XDP program.
func lbXDP(model string) (*xdp.Program, error) {
	_, em, err := ejfat.Embedding(model, "XDP")
	if err != nil {
		return nil, err
	}
	return xdp.Generate(em.Graph, xdp.Options{Limits: em.PRG.Limits, Command: "nsc cp"})
}

// buildLBXDP generates an LB model's XDP program and compiles it (clang)
// into dir, returning the object's path.
func buildLBXDP(model, dir string) (string, error) {
	prog, err := lbXDP(model)
	if err != nil {
		return "", err
	}
	return xdprun.Build(prog.C, dir, strings.ToLower(prog.Meta.Graph))
}

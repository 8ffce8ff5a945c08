package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/cp"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/packet"
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
	switch {
	case f.listen == "":
		return nil
	case f.tables == "":
		return usagef("--lb-listen needs --lb-tables")
	}
	if _, err := net.ParseMAC(f.memberMAC); err != nil {
		return usagef("--member-mac: %v", err)
	}
	return nil
}

// start opens the in-process LB and returns it with the Programming that
// drives it; nil without --lb-listen. The caller runs the LB and closes
// its sockets (lb.Config().Conns).
func (f *cpLBFlags) start() (*lbnet.LB, []*net.UDPConn, cp.Programming, error) {
	var prog cp.Programming
	if f.listen == "" {
		return nil, nil, prog, nil
	}
	var fixed net.HardwareAddr
	if f.mac != "" {
		var err error
		if fixed, err = net.ParseMAC(f.mac); err != nil {
			return nil, nil, prog, usagef("--lb-mac: %v", err)
		}
	}
	empty := func() ([]*packet.Table, error) { return lbfast.Tables(f.model, "", nil) }
	ts, err := empty()
	if err != nil {
		return nil, nil, prog, err
	}
	specs := func(name string) (*packet.TableSpec, bool) {
		i := slices.IndexFunc(ts, func(t *packet.Table) bool { return t.Spec().Name == name })
		if i < 0 {
			return nil, false
		}
		return ts[i].Spec(), true
	}
	if prog.Writer, err = calendar.NewWriter(specs); err != nil {
		return nil, nil, prog, fmt.Errorf("%s: %v", f.model, err)
	}
	mac, _ := net.ParseMAC(f.memberMAC) // checked
	copy(prog.MemberMAC[:], mac)
	base, err := readEntries(f.tables, specs)
	if err != nil {
		return nil, nil, prog, err
	}
	addr, err := net.ResolveUDPAddr("udp", f.listen)
	if err != nil {
		return nil, nil, prog, usagef("--lb-listen: %v", err)
	}
	conns, err := lbnet.Listen(addr, runtime.NumCPU())
	if err != nil {
		return nil, nil, prog, err
	}
	fwd, err := lbnet.New(lbnet.Config{Conns: conns,
		New: func(ts []*packet.Table) (fastpath.Pipeline, error) { return lbfast.NewSocket(f.model, ts) }})
	if err != nil {
		closeConns(conns)
		return nil, nil, prog, err
	}
	own := fixed
	install := func(ts []*packet.Table) error {
		if own == nil {
			var ok bool
			if own, ok = lbnet.OwnMAC(ts); !ok {
				return fmt.Errorf("%s: no unicast MAC in the MAC filter's entries; give --lb-mac", f.tables)
			}
		}
		return fwd.SetTables(ts, own)
	}
	set := &cp.TableSet{Empty: empty, Base: base, Install: install}
	if err := set.Apply(0, nil, calendar.Diff{}); err != nil { // the base entries alone
		closeConns(conns)
		return nil, nil, prog, err
	}
	prog.DataPlane = set
	return fwd, conns, prog, nil
}

// readEntries parses a table_add script for the tables specs names.
func readEntries(file string, specs func(string) (*packet.TableSpec, bool)) ([]packet.TableEntry, error) {
	r, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return packet.ParseEntries(file, r, specs)
}

func closeConns(conns []*net.UDPConn) {
	for _, c := range conns {
		c.Close()
	}
}

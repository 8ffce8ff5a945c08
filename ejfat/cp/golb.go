package cp

import (
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/ejfat/lbfast"
	"github.com/dragonet-go/nsc/ejfat/lbnet"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
)

// GoLB is an in-process LB, as `nsc lb` runs it (ejfat/lbnet over the
// model's Go fast path), programmed by the CP through a TableSet.
type GoLB struct {
	*lbnet.LB
	Conns       []*net.UDPConn // the LB's sockets; Close closes them
	Programming Programming    // for Config.Programming
}

// GoLBConfig is what NewGoLB needs.
type GoLBConfig struct {
	Model   string       // lb-2025 or lb-2026
	Listen  *net.UDPAddr // the LB's data address
	Workers int          // sockets on Listen (SO_REUSEPORT), each with its fast path
	// Base is a table_add script (named BaseName in errors) of the entries
	// the CP does not write: the LB's MAC and address filters, the
	// allowed sources.
	Base     io.Reader
	BaseName string
	// MAC is the LB's own MAC; nil: the one the MAC filter admits.
	MAC       net.HardwareAddr
	MemberMAC [6]byte // the Ethernet destination of every member
}

// NewGoLB opens the LB's sockets and installs the base entries; Run it.
func NewGoLB(cfg GoLBConfig) (*GoLB, error) {
	empty := func() ([]*table.Table, error) { return lbfast.Tables(cfg.Model, "", nil) }
	ts, err := empty()
	if err != nil {
		return nil, err
	}
	specs := func(name string) (*packet.TableSpec, bool) {
		i := slices.IndexFunc(ts, func(t *table.Table) bool { return t.Spec().Name == name })
		if i < 0 {
			return nil, false
		}
		return ts[i].Spec(), true
	}
	g := &GoLB{Programming: Programming{Tables: specs, MemberMAC: cfg.MemberMAC}}
	base, err := packet.ParseEntries(cfg.BaseName, cfg.Base, specs)
	if err != nil {
		return nil, err
	}
	if g.Conns, err = lbnet.Listen(cfg.Listen, cfg.Workers); err != nil {
		return nil, err
	}
	g.LB, err = lbnet.New(lbnet.Config{Conns: g.Conns,
		New: func(ts []*table.Table) (fastpath.Pipeline, error) { return lbfast.NewSocket(cfg.Model, ts) }})
	if err != nil {
		g.Close()
		return nil, err
	}
	own := cfg.MAC
	install := func(ts []*table.Table) error {
		if own == nil {
			var ok bool
			if own, ok = lbnet.OwnMAC(ts); !ok {
				return fmt.Errorf("%s: no unicast MAC in the MAC filter's entries", cfg.BaseName)
			}
		}
		return g.SetTables(ts, own)
	}
	set := &TableSet{Empty: empty, Base: base, Install: install}
	if err := set.Apply(0, nil, calendar.Diff{}); err != nil { // the base entries alone
		g.Close()
		return nil, err
	}
	g.Programming.DataPlane = set
	return g, nil
}

// Close closes the LB's sockets.
func (g *GoLB) Close() {
	for _, c := range g.Conns {
		c.Close()
	}
}

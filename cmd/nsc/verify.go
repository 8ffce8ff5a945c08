package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/embed"
	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/lpg"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/verify"
)

func runVerify(e *env, args []string) error {
	fs := newFlags("verify", e)
	lpgName := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG")
	n := fs.Int("packets", 10000, "how many packets to run")
	seed := fs.Uint64("seed", 1, "seed of the packet generator")
	bad := fs.String("mismatches", "", "where to write the packets that differ (default: a new temporary directory)")
	asJSON := fs.Bool("json", false, "print the result as JSON (docs/json.md)")
	tables := fs.String("tables", "", "table entries (table_add lines) for the LPG and the embedded graph")
	frames := fs.String("frames", "", "a pcap of frames to run too, into the LPG's "+lpg.RxEntry)
	files, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef("--packets must be at least 1")
	}
	if err := refuseOverwrite(files, *bad); err != nil {
		return err
	}
	defer fileout.AbortOnInterrupt()()
	em, err := embedding(files, *lpgName, *prg)
	if err != nil {
		return err
	}
	var load func() ([]*table.Table, error)
	var ts []*table.Table
	if *tables != "" {
		if ts, err = loadTablesFile(em.LPG.Schema, *tables); err != nil {
			return err
		}
		load = func() ([]*table.Table, error) { return loadTablesFile(em.LPG.Schema, *tables) }
	}
	cases := verify.GenerateTables(em, *n, *seed, ts)
	if *frames != "" {
		fr, err := pcapio.ReadFile(*frames)
		if err != nil {
			return err
		}
		for i, f := range fr {
			cases = append(cases, verify.Case{Source: lpg.RxEntry, Frame: f.Data, Why: fmt.Sprintf("frame %d of %s", i+1, *frames)})
		}
	}
	bar := newProgress(e, "verify", len(cases))
	res, err := verify.RunTables(em, load, cases, bar.update)
	bar.done()
	if err != nil {
		return err
	}
	claimed := 0
	for _, c := range res.Claims {
		claimed += c.Packets
	}
	if *asJSON {
		return verifyJSONOut(e, em, res, claimed, *bad)
	}
	var seqs string
	if res.Sequences > 0 {
		seqs = fmt.Sprintf(", %d segments in sequences", res.Sequences)
	}
	fmt.Fprintf(e.stdout, "%s into %s: %d packets (%d from predicate classes, %d lacking what a claim says%s, %d random or malformed), %d mismatches\n",
		em.LPG.Name, em.PRG.Name, res.Cases, res.Classes, claimed, seqs, res.Cases-res.Classes-claimed-res.Sequences, len(res.Mismatches))
	if em.Device != nil {
		fmt.Fprintf(e.stdout, "  split: %s runs %d of the embedded graph's %d nodes; %d packets went on to the host (at %s or an emit marked [host]; %d made from the classes it hands over)\n",
			em.PRG.Name, len(em.Device.Nodes)-1, len(em.Graph.Nodes), res.Hosted, embed.PuntNode, res.ForHost)
		if res.Hosted == 0 {
			fmt.Fprintf(e.stderr, "nsc verify: warning: no packet reached the host part of the split, so it is untested; the classes it takes need table entries (--tables) or frames (--frames)\n")
		}
	}
	writeClaims(e, res.Claims)
	for i, u := range res.Unreached {
		if i == 0 {
			fmt.Fprintf(e.stdout, "  %d LPG nodes not covered:\n", len(res.Unreached))
		}
		if i == 10 {
			fmt.Fprintf(e.stdout, "    ... and %d more\n", len(res.Unreached)-10)
			break
		}
		fmt.Fprintf(e.stdout, "    %s: %s\n", u.Node, u.Why)
	}
	if len(res.Mismatches) == 0 {
		return nil
	}
	for i, m := range res.Mismatches {
		if i == 5 {
			fmt.Fprintf(e.stdout, "... and %d more\n", len(res.Mismatches)-5)
			break
		}
		fmt.Fprintf(e.stdout, "\nmismatch %d: %s", i+1, m)
	}
	_, err = verifyFailed(em, res, *bad)
	return err
}

// verifyFailed writes the packets that differ to bad (or to a new
// temporary directory, never the working directory) and returns the
// error that says so, with the file's name.
func verifyFailed(em *embed.Embedding, res *verify.Result, bad string) (string, error) {
	if bad == "" {
		dir, err := os.MkdirTemp("", "nsc-verify-")
		if err != nil {
			return "", err
		}
		bad = filepath.Join(dir, "mismatches.pcap")
	}
	if err := writeMismatches(bad, res.Mismatches); err != nil {
		return "", err
	}
	return bad, fmt.Errorf("%d of %d packets differ between %s alone and embedded in %s; they are in %s",
		len(res.Mismatches), res.Cases, em.LPG.Name, em.PRG.Name, bad)
}

// loadTablesFile reads table_add lines for the schema's tables.
func loadTablesFile(s *packet.Schema, file string) ([]*table.Table, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return table.Load(s, file, f)
}

// writeClaims says, per fact the embedded graph trusts the PRG with, how
// many packets lacking it were run.
func writeClaims(e *env, cs []verify.ClaimResult) {
	for _, c := range cs {
		if c.Claim.Untested != "" {
			fmt.Fprintf(e.stdout, "  %s: %s\n", c.Claim.Name(), c.Claim.Untested)
			continue
		}
		fmt.Fprintf(e.stdout, "  %s: %d packets without it, %d reached %s, %d mismatches\n",
			c.Claim.Name(), c.Packets, c.Reached, c.Claim.Node, c.Mismatches)
	}
}

func writeMismatches(name string, ms []verify.Mismatch) error {
	w, err := pcapio.Create(name)
	if err != nil {
		return err
	}
	defer w.Abort()
	for i, m := range ms {
		w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0)}, m.Case.Frame)
	}
	return w.Commit()
}

// progress draws a bar on stderr for runs that take longer than a second.
type progress struct {
	e            *env
	what         string
	total        int
	start, shown time.Time
	drawn        int // the count last drawn, 0 before the first
}

func newProgress(e *env, what string, total int) *progress {
	return &progress{e: e, what: what, total: total, start: time.Now()}
}

func (p *progress) update(done int) {
	now := time.Now()
	if now.Sub(p.start) < time.Second || (now.Sub(p.shown) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.shown, p.drawn = now, done
	const width = 30
	filled := width * done / max(p.total, 1)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < filled {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.e.stderr, "\r%s [%s] %d/%d packets", p.what, bar, done, p.total)
}

func (p *progress) done() {
	if p.drawn == 0 {
		return
	}
	if p.drawn < p.total {
		p.update(p.total)
	}
	fmt.Fprintln(p.e.stderr)
}

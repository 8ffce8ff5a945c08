package main

import (
	"fmt"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/dragonet-go/nsc/internal/fileout"
	"github.com/dragonet-go/nsc/internal/pcapio"
	"github.com/dragonet-go/nsc/verify"
)

func runVerify(e *env, args []string) error {
	fs := newFlags("verify", e)
	lpg := fs.String("lpg", "", "the LPG")
	prg := fs.String("prg", "", "the PRG")
	n := fs.Int("packets", 10000, "how many packets to run")
	seed := fs.Uint64("seed", 1, "seed of the packet generator")
	bad := fs.String("mismatches", "verify-mismatches.pcap", "where to write the packets that differ")
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
	em, err := embedding(files, *lpg, *prg)
	if err != nil {
		return err
	}
	cases := verify.Generate(em, *n, *seed)
	bar := newProgress(e, "verify", len(cases))
	res, err := verify.Run(em, cases, bar.update)
	bar.done()
	if err != nil {
		return err
	}
	claimed := 0
	for _, c := range res.Claims {
		claimed += c.Packets
	}
	var seqs string
	if res.Sequences > 0 {
		seqs = fmt.Sprintf(", %d segments in sequences", res.Sequences)
	}
	fmt.Fprintf(e.stdout, "%s into %s: %d packets (%d from predicate classes, %d lacking what a claim says%s, %d random or malformed), %d mismatches\n",
		em.LPG.Name, em.PRG.Name, res.Cases, res.Classes, claimed, seqs, res.Cases-res.Classes-claimed-res.Sequences, len(res.Mismatches))
	writeClaims(e, res.Claims)
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
	if err := writeMismatches(*bad, res.Mismatches); err != nil {
		return err
	}
	return fmt.Errorf("verify: %d of %d packets differ between %s alone and embedded in %s; they are in %s",
		len(res.Mismatches), res.Cases, em.LPG.Name, em.PRG.Name, *bad)
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

package gorun

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dragonet-go/nsc/backends/golang"
	"github.com/dragonet-go/nsc/backends/golang/fastpath"
	"github.com/dragonet-go/nsc/packet"
	"github.com/dragonet-go/nsc/packet/table"
	"github.com/dragonet-go/nsc/sim"
)

// The program and nsc talk gob over its stdin and stdout: nsc sends a
// start, then the frames, and closes; the program answers a hello, one
// result per frame, and the counters at the end.

// protocol changes whenever the messages do: a program built against
// another nsc's runtime is refused rather than misread.
const protocol = 1

type start struct {
	Protocol   int
	TablesName string
	Tables     string // a table_add script
}

type hello struct{ Protocol int }

type frame struct {
	Time time.Time // the capture's: keyed state's timeouts run on it
	Data []byte
}

// result is where one frame went: out at Sink with Data, or dropped
// (Sink "").
type result struct {
	Sink string
	Data []byte
}

type done struct {
	Counters   sim.Counters
	InProgress map[string]int
}

// Serve is the main of a program nsc builds around a generated package
// (the package's Schema and New): it runs the frames nsc sends through
// the fast path. It exits the process.
func Serve(s *packet.Schema, newPipeline func([]*table.Table) (fastpath.Pipeline, error)) {
	out := bufio.NewWriter(os.Stdout)
	err := serve(bufio.NewReader(os.Stdin), out, s, newPipeline)
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serve(r io.Reader, w io.Writer, s *packet.Schema, newPipeline func([]*table.Table) (fastpath.Pipeline, error)) error {
	dec, enc := gob.NewDecoder(r), gob.NewEncoder(w)
	if err := enc.Encode(hello{protocol}); err != nil {
		return err
	}
	var st start
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	if st.Protocol != protocol {
		return fmt.Errorf("nsc speaks protocol %d, this program %d", st.Protocol, protocol)
	}
	ts, err := table.Load(s, st.TablesName, strings.NewReader(st.Tables))
	if err != nil {
		return err
	}
	pl, err := newPipeline(ts)
	if err != nil {
		return err
	}
	var now time.Time
	if c, ok := pl.(interface{ SetClock(func() time.Time) }); ok {
		c.SetClock(func() time.Time { return now })
	}
	var buf []byte
	for {
		var f frame
		if err := dec.Decode(&f); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading a frame: %w", err)
		}
		now = f.Time
		if need := 2*packet.Headroom + len(f.Data); len(buf) < need {
			buf = make([]byte, need)
		}
		n := copy(buf[packet.Headroom:], f.Data)
		var res result
		if r := pl.Process(buf, packet.Headroom, n); r.Sink >= 0 {
			res = result{pl.SinkName(int(r.Sink)), r.Data}
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	d := done{Counters: golang.Counters(pl), InProgress: map[string]int{}}
	if st, ok := pl.(interface{ States() []*fastpath.State }); ok {
		for i, state := range st.States() {
			d.InProgress[s.States[i].Name] = state.InProgress()
		}
	}
	return enc.Encode(d)
}

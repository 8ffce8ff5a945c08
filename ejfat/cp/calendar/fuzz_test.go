package calendar

import (
	"encoding/binary"
	"math"
	"testing"
)

// fuzzSessions decodes sessions from fuzz bytes: per session 2 bytes of
// member id, 3 float64s (weight, minimum and maximum factor, any bits)
// and a demand of 2 bytes index (−1 when 0xffff) and 2 bytes length.
func fuzzSessions(b []byte) []Session {
	var ss []Session
	for len(b) >= 30 {
		s := Session{
			Member:    binary.BigEndian.Uint16(b),
			Weight:    math.Float64frombits(binary.BigEndian.Uint64(b[2:])),
			MinFactor: math.Float64frombits(binary.BigEndian.Uint64(b[10:])),
			MaxFactor: math.Float64frombits(binary.BigEndian.Uint64(b[18:])),
		}
		if idx, n := int16(binary.BigEndian.Uint16(b[26:])), binary.BigEndian.Uint16(b[28:]); n != 0 {
			s.Demands = []SlotRange{{Index: int32(idx), Length: uint32(n)}}
		}
		ss = append(ss, s)
		b = b[30:]
	}
	return ss
}

// FuzzBuild: any sessions, however malformed, are refused or give a
// calendar whose demanded slots are their session's and whose counts are
// within one slot of the shares.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(append(fuzzSeed(1, 1, 0.5, 2, 10, 20), fuzzSeed(2, 3, 0, 0, 0xffff, 5)...), uint8(1))
	f.Add(append(fuzzSeed(1, 1e300, 1e300, 0, 0, 0), fuzzSeed(2, 1e-300, 0, 1e-300, 0, 0)...), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, strategy uint8) {
		ss := fuzzSessions(b)
		l, err := Build(Strategy(strategy%3), ss, nil)
		if err != nil {
			return
		}
		counts := l.Calendar.Counts()
		for i, s := range ss {
			for _, d := range s.Demands {
				if d.Index >= 0 {
					for j := d.Index; j < d.Index+int32(d.Length); j++ {
						if l.Calendar[j] != s.Member {
							t.Fatalf("slot %d demanded by %d is %d's", j, s.Member, l.Calendar[j])
						}
					}
				}
			}
			if math.Abs(float64(counts[s.Member])-l.Shares[i]) >= 1 {
				t.Fatalf("member %d: %d slots for a share of %v", s.Member, counts[s.Member], l.Shares[i])
			}
		}
	})
}

func fuzzSeed(member uint16, w, minF, maxF float64, idx, n uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, member)
	for _, x := range []float64{w, minF, maxF} {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	}
	b = binary.BigEndian.AppendUint16(b, idx)
	return binary.BigEndian.AppendUint16(b, n)
}

// FuzzPredictor: any sync samples give a boundary above every sender's
// last event number, or 2^64−1.
func FuzzPredictor(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add(binary.BigEndian.AppendUint64(make([]byte, 28), 1e9), int64(2e9))
	f.Fuzz(func(t *testing.T, b []byte, now int64) {
		p := &Predictor{Lead: 800e6, Guard: 200e6, Slack: 256}
		last := map[string]uint64{}
		for ; len(b) >= 29; b = b[29:] {
			s := Sample{
				EventNumber: binary.BigEndian.Uint64(b[1:]),
				RateHz:      binary.BigEndian.Uint32(b[9:]),
				SenderClock: int64(binary.BigEndian.Uint64(b[13:])),
				Received:    int64(binary.BigEndian.Uint64(b[21:])),
			}
			sender := string(rune('a' + b[0]%3))
			p.Add(sender, s)
			last[sender] = s.EventNumber
		}
		got, err := p.Boundary(now)
		if len(last) == 0 {
			if err == nil {
				t.Fatal("no samples, no error")
			}
			return
		}
		for sender, e := range last {
			if got <= e && got != math.MaxUint64 {
				t.Fatalf("boundary %d not above sender %s's %d", got, sender, e)
			}
		}
	})
}

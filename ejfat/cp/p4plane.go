package cp

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/dragonet-go/nsc/backends/p4/tableadd"
	"github.com/dragonet-go/nsc/ejfat/cp/calendar"
	"github.com/dragonet-go/nsc/packet"
)

// P4Script is the BMv2 data plane: each Apply writes its diff to Out as
// simple_switch_CLI commands in the program's names, table_add for the
// entries added, then table_modify, then table_delete (the order
// calendar.Diff keeps the live epochs' ticks in place with). BMv2 modifies
// and deletes by entry handle; P4Script predicts them as BMv2 assigns
// them (the lowest free index of the table, its 8-bit version above bit
// 24 counting the deletes at that index), so the switch must have started
// with the tables the CP writes (source filters, epochs, calendars,
// members) empty, and nothing else may write them.
type P4Script struct {
	// Tables are the program's (p4.Program.Tables), whose names the
	// lines use.
	Tables tableadd.Tables
	Out    io.Writer

	mu     sync.Mutex
	tables map[string]*bmTable // by model table name
}

// bmTable is BMv2's handle state of one table.
type bmTable struct {
	used     []bool
	versions []uint8
	handles  map[string]uint32 // entry identity → handle
}

// Apply implements DataPlane.
func (s *P4Script) Apply(instance int, _ []packet.TableEntry, d calendar.Diff) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tables == nil {
		s.tables = map[string]*bmTable{}
	}
	// Every line is made before any handle changes, so that an error
	// leaves the handles as the switch has them.
	lines := make([][]string, 3)
	for k, es := range [][]packet.TableEntry{d.Added, d.Modified, d.Deleted} {
		for _, te := range es {
			line, err := s.line(te)
			if err != nil {
				return err
			}
			lines[k] = append(lines[k], line)
		}
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# LB %d: %d added, %d modified, %d deleted\n", instance, len(d.Added), len(d.Modified), len(d.Deleted))
	for j, te := range d.Added {
		s.table(te.Table).add(entryKey(te))
		out.WriteString(lines[0][j])
	}
	for j, te := range d.Modified {
		h := s.table(te.Table).handles[entryKey(te)] // present: Compare found it in the old state
		f := strings.Fields(lines[1][j])             // table_add T A KEYS... => PARAMS... [PRIORITY]
		params := f[slices.Index(f, "=>")+1:][:len(te.Entry.Params)]
		fmt.Fprintf(&out, "table_modify %s %s %d => %s\n", f[1], f[2], h, strings.Join(params, " "))
	}
	for j, te := range d.Deleted {
		fmt.Fprintf(&out, "table_delete %s %d\n", strings.Fields(lines[2][j])[1], s.table(te.Table).remove(entryKey(te)))
	}
	_, err := s.Out.Write(out.Bytes())
	return err
}

// line is te as the program's table_add line.
func (s *P4Script) line(te packet.TableEntry) (string, error) {
	var b strings.Builder
	err := s.Tables.Entries(&b, []packet.TableEntry{te})
	return b.String(), err
}

func (s *P4Script) table(name string) *bmTable {
	t := s.tables[name]
	if t == nil {
		t = &bmTable{handles: map[string]uint32{}}
		s.tables[name] = t
	}
	return t
}

// add gives entry the handle BMv2 gives it.
func (t *bmTable) add(entry string) {
	i := 0
	for i < len(t.used) && t.used[i] {
		i++
	}
	if i == len(t.used) {
		t.used, t.versions = append(t.used, false), append(t.versions, 0)
	}
	t.used[i] = true
	t.handles[entry] = uint32(t.versions[i])<<24 | uint32(i)
}

// remove frees entry's handle (present: Compare found it in the old
// state), returning it.
func (t *bmTable) remove(entry string) uint32 {
	h := t.handles[entry]
	i := h & 0xffffff
	t.used[i] = false
	t.versions[i]++
	delete(t.handles, entry)
	return h
}

// entryKey is an entry's identity: its table, keys and priority.
func entryKey(te packet.TableEntry) string {
	return fmt.Sprint(te.Table, te.Entry.Keys, te.Entry.Priority)
}

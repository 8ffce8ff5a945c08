package xdprun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A pinned program is one process's attached program that others drive
// (nsc xdp attach --pin, nsc cp --xdp-pinned): a directory on a BPF
// filesystem holding the program, its maps under their names, the
// manifest: a one-entry array map whose value is the program's Meta as
// JSON, which says which map holds which table and how; and, pinned by
// the attaching process under LinkPin, the link that attaches it, so
// that it stays attached after that process exits, until the pin is
// removed.
const (
	ManifestPin = "nsc_manifest"
	LinkPin     = "link"
)

// OnBPFFS refuses a directory not on a BPF filesystem, the only place
// the kernel pins objects.
func OnBPFFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("%s is not on a BPF filesystem (mount one: mount -t bpf bpf /sys/fs/bpf)", dir)
	}
	return nil
}

// Pin pins the program, its maps and its manifest in dir, a new
// directory whose parent is on a BPF filesystem. On failure it removes
// what it pinned.
func (r *Runner) Pin(dir string) (err error) {
	if err := OnBPFFS(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	raw, err := json.Marshal(r.Meta)
	if err != nil {
		return err
	}
	mm, err := ebpf.NewMap(&ebpf.MapSpec{Name: ManifestPin, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(len(raw)), MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("the manifest's map: %w", err)
	}
	defer mm.Close()
	if err := mm.Put(uint32(0), raw); err != nil {
		return err
	}
	if err := mm.Pin(filepath.Join(dir, ManifestPin)); err != nil {
		return err
	}
	for name, m := range r.coll.Maps {
		if strings.HasPrefix(name, ".") { // .rodata and the like: nothing drives them
			continue
		}
		if err := m.Pin(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return r.prog.Pin(filepath.Join(dir, r.Meta.Program))
}

// OpenPinned opens the program and maps Pin pinned in dir; closing the
// Runner closes them here and leaves the pins.
func OpenPinned(dir string) (*Runner, error) {
	if err := OnBPFFS(dir); err != nil {
		return nil, err
	}
	mm, err := ebpf.LoadPinnedMap(filepath.Join(dir, ManifestPin), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: no manifest (pinned by nsc xdp attach --pin?): %w", dir, err)
	}
	var raw []byte
	err = mm.Lookup(uint32(0), &raw)
	mm.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: the manifest: %w", dir, err)
	}
	meta, err := ParseMeta(filepath.Join(dir, ManifestPin), raw)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	coll := &ebpf.Collection{Maps: map[string]*ebpf.Map{}, Programs: map[string]*ebpf.Program{}}
	for _, e := range ents {
		name, path := e.Name(), filepath.Join(dir, e.Name())
		switch name {
		case ManifestPin, LinkPin:
			continue
		case meta.Program:
			coll.Programs[name], err = ebpf.LoadPinnedProgram(path, nil)
		default:
			coll.Maps[name], err = ebpf.LoadPinnedMap(path, nil)
		}
		if err != nil {
			coll.Close()
			return nil, err
		}
	}
	return newRunner(dir, meta, coll)
}

// SameTables reports how o's tables are not laid out as m's (nil if they
// are): a Live writes a program's maps by its Meta, so the pinned
// program's must be the one the caller means to program.
func (m *Meta) SameTables(o *Meta) error {
	if m.Graph != o.Graph {
		return fmt.Errorf("graph %s, not %s", o.Graph, m.Graph)
	}
	if len(m.Tables) != len(o.Tables) || m.Lens != o.Lens {
		return fmt.Errorf("%d tables (lengths in %s), not %d (in %s)", len(o.Tables), o.Lens, len(m.Tables), m.Lens)
	}
	var errs []error
	for i := range m.Tables {
		a, err := json.Marshal(m.Tables[i])
		if err != nil {
			return err
		}
		b, err := json.Marshal(o.Tables[i])
		if err != nil {
			return err
		}
		if !bytes.Equal(a, b) {
			errs = append(errs, fmt.Errorf("table %s differs (spec, map or mode)", m.Tables[i].Spec.Name))
		}
	}
	return errors.Join(errs...)
}

// LockPinned makes the caller the one process that drives the pinned
// program in dir (one Live writes its maps) until the returned file is
// closed: an exclusive flock on the directory, which the kernel drops
// when the holder exits however it exits (kill -9 too), so a crashed
// driver never keeps the next one out and a live one always does.
func LockPinned(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: another process drives the pinned program", dir)
		}
		return nil, fmt.Errorf("%s: lock: %w", dir, err)
	}
	return f, nil
}

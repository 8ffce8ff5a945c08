package cp

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// lockDB makes the caller the one process that uses the database at path
// until the returned file is closed: an exclusive flock on path.lock,
// which the kernel drops when the holder exits however it exits, so a
// killed CP never keeps the next one out and a live one always does. Two
// CPs on one database would each serve their own copy of it in memory
// and diverge. The file says who holds it (Store.Announce adds where it
// serves), for the refusal to name.
func lockDB(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b, _ := os.ReadFile(name)
			return nil, fmt.Errorf("%s is in use by another nsc cp (%s)", path, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("%s: lock: %w", name, err)
	}
	if err := writeHolder(f, ""); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeHolder writes into the lock file f who holds it: this process, its
// host, and where, when known.
func writeHolder(f *os.File, where string) error {
	host, _ := os.Hostname()
	s := fmt.Sprintf("pid %d on host %s", os.Getpid(), host)
	if where != "" {
		s += ", " + where
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(s+"\n"), 0)
	return err
}

// Announce adds where the CP serves to what the database's lock file
// says of its holder.
func (s *Store) Announce(where string) error { return writeHolder(s.lock, where) }

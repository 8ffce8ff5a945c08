// Package fileout writes output files all or nothing: the bytes go to a
// temporary file beside the target, which is renamed into place only when
// the writer commits. An error, an Abort or (with AbortOnInterrupt) a
// SIGINT or SIGTERM removes the temporary file and leaves whatever was at
// the target untouched.
package fileout

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// File is an output file being written. Write to it, then Commit; defer
// Abort so that every other way out removes the temporary file.
type File struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
	done      bool
}

// pending are the temporary files not yet committed or aborted, for the
// interrupt handler to remove. mu also orders a commit's rename against
// the handler: once the handler holds it, no rename happens.
var (
	mu      sync.Mutex
	pending = map[*File]bool{}
)

// Create starts writing path (mode 0644 less the umask). When path is a
// symbolic link, the file it points to is the one replaced, as a plain
// os.Create would have written through the link.
func Create(path string) (*File, error) {
	target, err := resolve(path)
	if err != nil {
		return nil, err
	}
	dir, base := filepath.Split(target)
	// Created and registered under mu, so an interrupt finds every
	// temporary file there is.
	mu.Lock()
	defer mu.Unlock()
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(rand.Uint64()%1e10, 10))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the target's name, not the temporary one
			}
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		o := &File{path: target, tmp: tmp, f: f, bw: bufio.NewWriterSize(f, 64<<10)}
		pending[o] = true
		return o, nil
	}
	return nil, fmt.Errorf("create %s: no free temporary name in %s", path, dir)
}

// resolve follows path's symbolic links, if it has any and exists.
func resolve(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	return filepath.EvalSymlinks(path)
}

// Write buffers p for the temporary file.
func (o *File) Write(p []byte) (int, error) { return o.bw.Write(p) }

// TempName is the temporary file, for a tool that writes it by name (a
// compiler's -o). The File still commits or aborts it.
func (o *File) TempName() string { return o.tmp }

// Commit flushes, syncs and closes the temporary file and renames it to
// the target. On any error the temporary file is removed. Commit after
// Commit or Abort is an error.
func (o *File) Commit() error {
	if o.done {
		return fmt.Errorf("%s: already committed or aborted", o.path)
	}
	err := errors.Join(o.bw.Flush(), o.f.Sync(), o.f.Close())
	mu.Lock()
	defer mu.Unlock()
	o.done = true
	delete(pending, o)
	if err == nil {
		err = os.Rename(o.tmp, o.path)
	}
	if err != nil {
		os.Remove(o.tmp)
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	return nil
}

// Abort removes the temporary file; after Commit it does nothing, so it
// can be deferred.
func (o *File) Abort() {
	mu.Lock()
	defer mu.Unlock()
	if o.done {
		return
	}
	o.done = true
	delete(pending, o)
	o.f.Close()
	os.Remove(o.tmp)
}

// WriteFile writes data to path, all or nothing.
func WriteFile(path string, data []byte) error {
	o, err := Create(path)
	if err != nil {
		return err
	}
	defer o.Abort()
	if _, err := o.Write(data); err != nil {
		return err
	}
	return o.Commit()
}

// NotInput refuses an output that is the same file as one of the inputs
// (by device and inode, so whatever the names or links say). An output
// that does not exist yet is no input.
func NotInput(out string, inputs ...string) error {
	ost, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if ist, err := os.Stat(in); err == nil && os.SameFile(ost, ist) {
			return fmt.Errorf("output %s is the input %s: refusing to overwrite it", out, in)
		}
	}
	return nil
}

// AbortOnInterrupt makes SIGINT and SIGTERM remove every temporary file
// not yet committed and then end the process as the signal would have,
// until stop is called. Commands that handle interrupts themselves (to
// stop and save) do not call it.
func AbortOnInterrupt() (stop func()) {
	sigs := make(chan os.Signal, 1)
	quit := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			removePending()
			reraise(sig)
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(quit)
	}
}

// removePending removes the uncommitted temporary files and keeps mu
// locked, so that no commit renames one afterwards.
func removePending() {
	mu.Lock()
	for o := range pending {
		o.f.Close()
		os.Remove(o.tmp)
	}
}

// reraise ends the process by sig with its default action, so that the
// exit status says what happened.
func reraise(sig os.Signal) {
	signal.Reset(sig)
	if s, ok := sig.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), s)
		time.Sleep(time.Second) // the signal is on its way
	}
	os.Exit(130)
}

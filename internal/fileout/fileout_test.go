package fileout

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dragonet-go/nsc/internal/testutil"
)

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	os.WriteFile(path, []byte("old"), 0o644)
	o, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	o.Write([]byte("new "))
	if got := content(t, path); got != "old" {
		t.Errorf("before Commit the target holds %q", got)
	}
	o.Write([]byte("contents"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	o.Abort() // after Commit: nothing
	if got := content(t, path); got != "new contents" {
		t.Errorf("after Commit: %q", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm()&0o600 != 0o600 || st.Mode().Perm()&0o022 != 0o022&^umask(t) {
		t.Errorf("mode %v", st.Mode())
	}
	if got := testutil.DirNames(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Errorf("directory holds %v", got)
	}
	if err := o.Commit(); err == nil {
		t.Errorf("second Commit: no error")
	}
}

func umask(t *testing.T) os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// A writer that fails midway (its caller returns with an error, Abort
// deferred) leaves the old file as it was and nothing beside it; so does
// a Commit whose rename fails.
func TestFailureLeavesTargetAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	os.WriteFile(path, []byte("old"), 0o644)
	errMidway := errors.New("table script line 3: bad entry")
	write := func() error {
		o, err := Create(path)
		if err != nil {
			return err
		}
		defer o.Abort()
		o.Write(make([]byte, 1<<20)) // past the buffer: on disk
		return errMidway
	}
	if err := write(); err != errMidway {
		t.Fatal(err)
	}
	if got := content(t, path); got != "old" {
		t.Errorf("target holds %d bytes", len(got))
	}
	if got := testutil.DirNames(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Errorf("directory holds %v", got)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "x"), nil, 0o644)
	if err := WriteFile(sub, []byte("data")); err == nil || !strings.Contains(err.Error(), "write "+sub) {
		t.Errorf("renaming over a directory: %v", err)
	}
	if got := testutil.DirNames(t, dir); !slices.Equal(got, []string{"out", "sub"}) {
		t.Errorf("directory holds %v", got)
	}
	missing := filepath.Join(dir, "missing", "out")
	if err := WriteFile(missing, nil); err == nil || err.Error() != "create "+missing+": no such file or directory" {
		t.Errorf("missing directory: %v", err)
	}
}

// Through a symbolic link, the file it points to is replaced and the link
// stays.
func TestSymlinkTarget(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	os.WriteFile(real, []byte("old"), 0o644)
	os.Symlink("real", link)
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, real); got != "new" {
		t.Errorf("link's target: %q", got)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone: %v %v", st, err)
	}
}

func TestNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	other := filepath.Join(dir, "other.pcap")
	os.WriteFile(in, []byte("in"), 0o644)
	os.WriteFile(other, []byte("other"), 0o644)
	os.Symlink("in.pcap", filepath.Join(dir, "link.pcap"))
	os.Link(in, filepath.Join(dir, "hard.pcap"))
	wd, _ := os.Getwd()
	os.Chdir(dir)
	defer os.Chdir(wd)
	for _, out := range []string{in, "in.pcap", "./in.pcap", "../" + filepath.Base(dir) + "/in.pcap", filepath.Join(dir, "link.pcap"), "hard.pcap"} {
		if err := NotInput(out, other, "in.pcap"); err == nil || !strings.Contains(err.Error(), "output "+out+" is the input in.pcap") {
			t.Errorf("NotInput(%s): %v", out, err)
		}
	}
	for _, out := range []string{other, "new.pcap"} {
		if err := NotInput(out, "in.pcap", "missing.pcap"); err != nil {
			t.Errorf("NotInput(%s): %v", out, err)
		}
	}
}

// SIGINT while writing, with AbortOnInterrupt: the process dies of the
// signal, the temporary file is gone and the old target is as it was.
// The test runs itself as the process that is interrupted.
func TestInterrupt(t *testing.T) {
	if path := os.Getenv("FILEOUT_INTERRUPT"); path != "" {
		defer AbortOnInterrupt()()
		o, err := Create(path)
		if err != nil {
			os.Exit(3)
		}
		o.Write(make([]byte, 1<<20))
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		select {} // the handler ends the process
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	os.WriteFile(path, []byte("old"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterrupt$")
	cmd.Env = append(os.Environ(), "FILEOUT_INTERRUPT="+path)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Fatalf("the process ended with %v, not by SIGINT", err)
	}
	if got := content(t, path); got != "old" {
		t.Errorf("target holds %d bytes", len(got))
	}
	if got := testutil.DirNames(t, dir); !slices.Equal(got, []string{"out"}) {
		t.Errorf("directory holds %v", got)
	}
}

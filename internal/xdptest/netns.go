package xdptest

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// InNetns runs f on a thread inside network namespace ns (ip netns's
// /var/run/netns/NS), then puts the thread back.
func InNetns(t testing.TB, ns string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is dropped, not reused, if it cannot go back.
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			done <- err
			return
		}
		defer self.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			done <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

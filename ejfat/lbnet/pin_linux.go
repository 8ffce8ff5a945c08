package lbnet

import (
	"time"

	"golang.org/x/sys/unix"
)

// pin binds the calling thread to the i-th CPU of those the process may
// run on (modulo their number).
func pin(i int) error {
	var allowed, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return err
	}
	i %= allowed.Count()
	for cpu := 0; ; cpu++ {
		if allowed.IsSet(cpu) {
			if i == 0 {
				one.Set(cpu)
				return unix.SchedSetaffinity(0, &one)
			}
			i--
		}
	}
}

// threadCPU is the time the calling thread has run, in user space and in
// the kernel (the softirqs it ran included: on loopback, the delivery of
// what it sends).
func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// runMain runs args[0] with args[1:] (its stdout discarded, its stderr
// passed on) and prints its wall time and CPU time (user + system), in
// microseconds: finer than /usr/bin/time, whose CPU times are in 10 ms.
func runMain(args []string) {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: bench run COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench run %s: %v\n", args[0], err)
		os.Exit(1)
	}
	wall := time.Since(start)
	cpu := time.Duration(0)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	fmt.Printf("%d %d\n", wall.Microseconds(), cpu.Microseconds())
}

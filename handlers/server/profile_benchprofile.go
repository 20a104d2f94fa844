//go:build benchprofile

package server

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// With -tags benchprofile (bench/e2e -cpuprofile), a gateway profiles its
// CPU into $CURSOR2API_CPUPROFILE until SIGUSR2, then writes its
// allocations to $CURSOR2API_CPUPROFILE.allocs. Release builds lack this.
func init() {
	path := os.Getenv("CURSOR2API_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cursor2api: cpu profile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cursor2api: cpu profile:", err)
		f.Close()
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	go func() {
		<-sig
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}()
}

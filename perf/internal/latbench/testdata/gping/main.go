// Command gping is cping (../cping.c: erdmakit's C ping-pong, no Go) run
// from a Go program: the whole run in one cgo call on the main goroutine,
// the Go runtime around it idle. Against cping it tells the Go process from
// the C loop (docs/bw.md, "Looking for the 2-4%"). An experiment, not a
// tool; build it with
//
//	go build -a -o bin/gping ./perf/internal/latbench/testdata/gping
//
// (-a: the go command does not see changes to the C files it includes
// from outside this directory.)
package main

/*
#cgo CFLAGS: -O2 -I${SRCDIR}/../../../../../ibverbs -Wno-deprecated-declarations
#cgo LDFLAGS: -ldl -lpthread
#include <stdio.h>
#include <stdlib.h>
int cping_main(int argc, char **argv);
static void flush_all(void) { fflush(NULL); }
*/
import "C"

import (
	"os"
	"runtime"
	"unsafe"
)

func main() {
	runtime.LockOSThread()
	argv := (**C.char)(C.calloc(C.size_t(len(os.Args)+1), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	args := unsafe.Slice(argv, len(os.Args)+1)
	for i, a := range os.Args {
		args[i] = C.CString(a)
	}
	rc := C.cping_main(C.int(len(os.Args)), argv)
	C.flush_all() // cping prints through stdio; os.Exit would not flush it
	os.Exit(int(rc))
}

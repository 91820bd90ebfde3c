//go:build amd64 && !purego

package ncclog

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The vector search never reads past its input: inputs that end where an
// unmapped page begins, of every length up to a few steps and from every
// offset, would fault on a read one byte too far.
func TestFindNCCLStaysInBounds(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.NoError(t, syscall.Mprotect(mem[page:], syscall.PROT_NONE))
	for _, fill := range []string{"x", "N", "NCCL INFO a\n", "NET/IB\n", "NCCL INFO no line end"} {
		end := mem[:page]
		copy(end, strings.Repeat(fill, page/len(fill)+1))
		for n := range 200 {
			b := end[page-n:]
			at, eol := findNCCL(b)
			wantAt, wantEOL := findNCCLGeneric(b, 0)
			require.Equal(t, [2]int{wantAt, wantEOL}, [2]int{at, eol}, "fill %q, %d bytes", fill, n)
		}
	}
}

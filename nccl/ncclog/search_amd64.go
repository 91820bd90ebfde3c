//go:build amd64 && !purego

package ncclog

import "unsafe"

// findNCCLVectorised says which search runs here, set once from CPUID: the
// CPU has AVX2 and the OS saves the YMM registers.
var findNCCLVectorised = cpuHasAVX2()

// findNCCLAVX2 is findNCCL over p[:n], n >= findNCCLMin, for the positions
// below (n-3)/32*32 (a step reads 32 bytes at +0, +1 and +3); at is -1
// where none of those is a candidate. eol is -1 where the line's end is
// not within the whole 32-byte steps that fit in p[:n] after at.
//
//go:noescape
func findNCCLAVX2(p *byte, n int) (at, eol int)

const findNCCLMin = 35

func findNCCL(b []byte) (at, eol int) {
	if !findNCCLVectorised || len(b) < findNCCLMin {
		return findNCCLGeneric(b, 0)
	}
	at, eol = findNCCLAVX2(unsafe.SliceData(b), len(b))
	switch {
	case at < 0:
		return findNCCLGeneric(b, (len(b)-3)/32*32)
	case eol < 0:
		return at, lineEnd(b, at)
	}
	return at, eol
}

//go:noescape
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

//go:noescape
func xgetbv() (eax uint32)

func cpuHasAVX2() bool {
	if maxID, _, _, _ := cpuid(0, 0); maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xgetbv()&6 != 6 { // the OS saves XMM and YMM state
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

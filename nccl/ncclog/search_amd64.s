//go:build amd64 && !purego

#include "textflag.h"

// The bytes the search compares, broadcast to every lane from memory: moving
// them in through a general register with a legacy-SSE MOVD cost some
// 600 ns a call on the VM this was measured on (an SSE/AVX transition).
DATA findBytes<>+0(SB)/1, $0x4E // 'N'
DATA findBytes<>+1(SB)/1, $0x43 // 'C'
DATA findBytes<>+2(SB)/1, $0x4C // 'L'
DATA findBytes<>+3(SB)/1, $0x45 // 'E'
DATA findBytes<>+4(SB)/1, $0x2F // '/'
DATA findBytes<>+5(SB)/1, $0x0A // '\n'
GLOBL findBytes<>(SB), RODATA|NOPTR, $6

// func findNCCLAVX2(p *byte, n int) (at, eol int)
//
// A step tests the 32 positions from SI: p[i]=='N' && (p[i+1]=='C' &&
// p[i+3]=='L' || p[i+1]=='E' && p[i+3]=='/'), loading p[i:], p[i+1:] and
// p[i+3:]. Steps run while i+32+3 <= n. Once a candidate is found, the
// line's end is searched from it in whole 32-byte loads that end by n.
TEXT ·findNCCLAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), R8
	LEAQ -3(R8), CX
	SHRQ $5, CX // steps
	MOVQ DI, SI
	VPBROADCASTB findBytes<>+0(SB), Y0
	VPBROADCASTB findBytes<>+1(SB), Y10
	VPBROADCASTB findBytes<>+2(SB), Y11
	VPBROADCASTB findBytes<>+3(SB), Y12
	VPBROADCASTB findBytes<>+4(SB), Y13

step:
	VMOVDQU 1(SI), Y2
	VMOVDQU 3(SI), Y3
	VPCMPEQB Y2, Y10, Y4 // p[i+1]=='C'
	VPCMPEQB Y3, Y11, Y5 // p[i+3]=='L'
	VPAND Y4, Y5, Y4
	VPCMPEQB Y2, Y12, Y2 // p[i+1]=='E'
	VPCMPEQB Y3, Y13, Y3 // p[i+3]=='/'
	VPAND Y2, Y3, Y2
	VPOR Y2, Y4, Y4
	VPCMPEQB (SI), Y0, Y1 // p[i]=='N'
	VPAND Y1, Y4, Y4
	VPMOVMSKB Y4, AX
	TESTL AX, AX
	JNZ found
	ADDQ $32, SI
	DECQ CX
	JNZ step
	VZEROUPPER
	MOVQ $-1, at+16(FP)
	MOVQ $-1, eol+24(FP)
	RET

found:
	BSFL AX, AX
	SUBQ DI, SI
	ADDQ SI, AX
	MOVQ AX, at+16(FP)
	VPBROADCASTB findBytes<>+5(SB), Y9
	MOVQ AX, BX // j: the next load's offset

eolstep:
	LEAQ 32(BX), DX
	CMPQ DX, R8
	JA noeol
	VPCMPEQB (DI)(BX*1), Y9, Y1
	VPMOVMSKB Y1, DX
	TESTL DX, DX
	JNZ eolfound
	ADDQ $32, BX
	JMP eolstep

eolfound:
	BSFL DX, DX
	ADDQ DX, BX
	MOVQ BX, eol+24(FP)
	VZEROUPPER
	RET

noeol:
	VZEROUPPER
	MOVQ $-1, eol+24(FP)
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	RET

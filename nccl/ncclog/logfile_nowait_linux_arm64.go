package ncclog

const sysPreadv2 = 286 // include/uapi/asm-generic/unistd.h

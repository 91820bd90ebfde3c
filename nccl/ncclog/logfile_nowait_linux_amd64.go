package ncclog

const sysPreadv2 = 327 // arch/x86/entry/syscalls/syscall_64.tbl

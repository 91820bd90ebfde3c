//go:build !amd64 || purego

package ncclog

func findNCCL(b []byte) (at, eol int) { return findNCCLGeneric(b, 0) }

const findNCCLVectorised = false

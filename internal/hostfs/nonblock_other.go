//go:build !unix

package hostfs

const oNonblock = 0

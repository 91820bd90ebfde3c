//go:build !unix

package hostconf

const oNoFollow = 0

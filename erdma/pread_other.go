//go:build !unix

package erdma

import (
	"errors"
	"io"
	"os"
)

// pread0 reads from offset 0 (no sysfs outside Linux: a recorded host's
// counter files); a short file is not an error.
func pread0(f *os.File, _ int, b []byte) (int, error) {
	n, err := f.ReadAt(b, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

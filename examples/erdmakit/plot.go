package main

import (
	"fmt"
	"io"

	"github.com/erdmakit/erdmakit/internal/atomicfile"
)

// writeSVG writes the plot draw makes into path, the way every output is
// written (internal/atomicfile: never through a symlink, never over a FIFO
// or a device; the umask followed, an existing file's mode kept).
func writeSVG(path string, draw func(io.Writer) error) error {
	if err := atomicfile.Write(path, 0o644, draw); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

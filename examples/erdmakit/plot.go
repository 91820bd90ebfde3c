package main

import (
	"fmt"
	"io"
	"os"
)

// writeSVG creates path and lets draw write the plot into it.
func writeSVG(path string, draw func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := draw(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Close()
}

// Package render is the CLI's side of printing: whether a writer gets
// colour (--color, the terminal, NO_COLOR, MPI ranks), JSON for programs,
// and the aligned tables of the commands that only the CLI shows. The
// results' tables are package report's (report.WriteDoctorTable, ...),
// which is handed the colour decision made here; no domain package imports
// this one (internal/moduletest pins it).
package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/erdmakit/erdmakit/internal/render/table"
	"golang.org/x/term"
)

// Table is a header row and data rows, printed with columns aligned
// (package table, which parsers may use without this package's terminal
// dependencies).
type Table = table.Table

// NewTable returns a table with the given header and no colouring.
func NewTable(header ...string) *Table { return table.New(header...) }

// Severity returns word wrapped in the colour of its severity
// (ok green, warn yellow, fail red, skip grey); other words unchanged.
func Severity(word string) string { return table.Severity(word) }

// IsTerminal reports whether w is a terminal (colour and live progress are
// only for terminals). NO_COLOR in the environment turns colour off.
// A writer that wraps a file (safetext.Writer) is seen through by its Fd.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && f.Fd() != ^uintptr(0) && term.IsTerminal(int(f.Fd()))
}

// ColorWanted reports whether colour should be used on w (ColorAuto).
func ColorWanted(w io.Writer) bool {
	return ColorAuto.Wanted(w)
}

// ColorMode is the --color choice.
type ColorMode string

const (
	ColorAuto   ColorMode = "auto"   // a terminal, outside MPI/Slurm ranks, without NO_COLOR or TERM=dumb
	ColorAlways ColorMode = "always" // escape codes even into files
	ColorNever  ColorMode = "never"
)

// WithColor returns w carrying a colour decision already taken (by --color),
// for code that is handed only a writer: ColorWanted(w) then returns on.
func WithColor(w io.Writer, on bool) io.Writer { return colorWriter{w, on} }

type colorWriter struct {
	io.Writer
	on bool
}

// ErrColorMode: a --color value other than auto, always or never.
var ErrColorMode = errors.New("invalid colour mode")

// ParseColorMode reads a --color value.
func ParseColorMode(s string) (ColorMode, error) {
	switch m := ColorMode(s); m {
	case ColorAuto, ColorAlways, ColorNever:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want auto, always or never", ErrColorMode, s)
}

// rankVars are set by the launchers in every rank. Open MPI gives each rank
// a pty, so a rank's stdout looks like a terminal while it ends in a file.
var rankVars = [...]string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}

// Wanted reports whether colour should be used on w in mode m.
func (m ColorMode) Wanted(w io.Writer) bool {
	if cw, ok := w.(colorWriter); ok {
		return cw.on
	}
	switch m {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	for _, v := range rankVars {
		if _, ok := os.LookupEnv(v); ok {
			return false
		}
	}
	return IsTerminal(w)
}

// JSON writes v as indented JSON followed by a newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	return nil
}

// Package render prints what erdmakit's commands report: aligned tables for
// people (coloured on a terminal) and JSON for programs. Every command's
// output goes through here so that all of them look alike.
package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// Table is a header row and data rows, printed with columns aligned.
type Table struct {
	Header []string
	Rows   [][]string
	// Color, when set, colours cells of the named column by Severity.
	Color bool
	// SeverityColumn is the index of the column holding a severity word
	// (ok, warn, fail, skip) to colour; -1 or out of range for none.
	SeverityColumn int
}

// NewTable returns a table with the given header and no colouring.
func NewTable(header ...string) *Table {
	return &Table{Header: header, SeverityColumn: -1}
}

// Add appends a row; missing cells print empty.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table, two spaces between columns.
func (t *Table) Write(w io.Writer) error {
	width := make([]int, len(t.Header))
	grow := func(row []string) {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			if n := utf8.RuneCountInString(c); n > width[i] {
				width[i] = n
			}
		}
	}
	grow(t.Header)
	for _, r := range t.Rows {
		grow(r)
	}
	var b strings.Builder
	line := func(row []string, header bool) {
		for i := range width {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			pad := width[i] - utf8.RuneCountInString(c)
			if t.Color && !header && i == t.SeverityColumn {
				c = Severity(c)
			}
			if i == len(width)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", pad+2))
		}
		b.WriteString("\n")
	}
	if len(t.Header) > 0 {
		line(t.Header, true)
	}
	for _, r := range t.Rows {
		line(r, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ANSI colours for severities.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	grey   = "\x1b[90m"
	reset  = "\x1b[0m"
)

// Severity returns word wrapped in the colour of its severity
// (ok green, warn yellow, fail red, skip grey); other words unchanged.
func Severity(word string) string {
	switch strings.ToLower(word) {
	case "ok", "pass", "passed":
		return green + word + reset
	case "warn", "warning":
		return yellow + word + reset
	case "fail", "failed", "error":
		return red + word + reset
	case "skip", "skipped", "unknown":
		return grey + word + reset
	}
	return word
}

// IsTerminal reports whether w is a terminal (colour and live progress are
// only for terminals). NO_COLOR in the environment turns colour off.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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

// Package table prints aligned text tables, two spaces between columns,
// severity words coloured on request: render's tables, with nothing but the
// standard library, so that the portable parsers can print one too.
package table

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/erdmakit/erdmakit/internal/safetext"
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

// New returns a table with the given header and no colouring.
func New(header ...string) *Table {
	return &Table{Header: header, SeverityColumn: -1}
}

// Add appends a row; missing cells print empty.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table, two spaces between columns.
//
// Cells are one line each: control characters in them (a peer's host name,
// a device name from a recorded host) are printed escaped (safetext.Line).
func (t *Table) Write(w io.Writer) error {
	header := safeRow(t.Header)
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = safeRow(r)
	}
	width := make([]int, len(header))
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
	grow(header)
	for _, r := range rows {
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
	if len(header) > 0 {
		line(header, true)
	}
	for _, r := range rows {
		line(r, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// safeRow returns row with its cells escaped, or row itself when none
// needed it.
func safeRow(row []string) []string {
	var out []string
	for i, c := range row {
		if e := safetext.Line(c); e != c {
			if out == nil {
				out = append([]string(nil), row...)
			}
			out[i] = e
		}
	}
	if out == nil {
		return row
	}
	return out
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

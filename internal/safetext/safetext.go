// Package safetext makes text that came from outside (a server's error
// message, a peer's host name, a file name under a recorded host) safe to
// print on a terminal: control characters and invalid UTF-8 are shown as Go
// escapes (\x1b, \n, \xff) instead of being obeyed, so such text can neither
// drive the terminal (set its title, clear the screen) nor forge a line of
// erdmakit's own output. Standard library only: the portable parsers use it.
package safetext

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line returns s with every control character (newlines and tabs too) and
// every invalid UTF-8 byte escaped: for one-line fields such as table
// cells, host names and device names.
func Line(s string) string { return escape(s, false) }

// Text is Line that keeps newlines and tabs: for multi-line messages.
func Text(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case unsafeRune(r, keepLines):
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u0085'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return cleanSlow(s[i:], keepLines)
		}
		if c < 0x20 || c == 0x7f {
			if keepLines && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
	}
	return true
}

func cleanSlow(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r, keepLines) {
			return false
		}
		i += n
	}
	return true
}

// unsafeRune: C0 controls, DEL, C1 controls (U+0080-U+009F: some terminals
// obey them as 8-bit escapes), and the bidirectional overrides that reorder
// what a reader sees.
func unsafeRune(r rune, keepLines bool) bool {
	switch {
	case keepLines && (r == '\n' || r == '\t'):
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Writer escapes, in everything written through it, what Text escapes,
// except erdmakit's own severity colours: the last guard on the CLI's
// stdout and stderr for text that reaches them unescaped.
type Writer struct {
	w io.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Fd returns the underlying file's descriptor (or ^uintptr(0) when w is not
// a file), so that terminal detection sees through the Writer.
func (w *Writer) Fd() uintptr {
	if f, ok := w.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// Unwrap returns the writer underneath.
func (w *Writer) Unwrap() io.Writer { return w.w }

// Write writes p, escaped; it reports len(p) written when all of the
// escaped form was written. Each Write is escaped on its own: a UTF-8
// character split across two writes shows as escaped bytes.
func (w *Writer) Write(p []byte) (int, error) {
	s := string(p)
	if clean(s, true) {
		return w.w.Write(p)
	}
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			b.WriteString(Text(s))
			break
		}
		b.WriteString(Text(s[:i]))
		s = s[i:]
		ok := false
		// The only escape sequences erdmakit itself prints: the severity
		// colours of package table.
		for _, c := range [...]string{"\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[90m", "\x1b[0m"} {
			if strings.HasPrefix(s, c) {
				b.WriteString(c)
				s = s[len(c):]
				ok = true
				break
			}
		}
		if !ok {
			b.WriteString(`\x1b`)
			s = s[1:]
		}
	}
	if _, err := io.WriteString(w.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

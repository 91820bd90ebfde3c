package plot

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The charts are written as SVG by hand: a few line, bar and cell charts do
// not need a plotting library's fonts, PDF and LaTeX writers (gonum/plot
// cost an importer 26 MB of downloads and 8.4 MB of binary). Sizes are in
// px; the text is sans-serif, measured with an estimated advance, so the
// layout leaves room for the widest glyphs rather than measuring fonts.

const (
	fontSize  = 13.0
	titleSize = 15.0
	// charWidth is an upper estimate of a sans-serif glyph's advance in em.
	charWidth = 0.58
	// pad keeps the markers at the edges of the data inside the frame.
	pad = 8.0
)

// palette are the series colours, in order (8 bytes each): distinct, and
// readable on white.
const palette = "#4e79a7 #e15759 #59a14f #f28e2b #b07aa1 #76b7b2 #9c755f #edc948 #ff9da7 #7f7f7f "

// colour is the i-th series colour (cycling).
func colour(i int) string {
	i %= len(palette) / 8
	return palette[i*8 : i*8+7]
}

// textWidth estimates the width in px of s at size px.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * charWidth
}

// canvas collects one SVG document.
type canvas struct {
	b    strings.Builder
	w, h float64
}

func newCanvas(w, h float64) *canvas {
	c := &canvas{w: math.Round(w), h: math.Round(h)}
	// One line: the report page checks that http:// occurs only beside xmlns.
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="%s">`+"\n",
		num(c.w), num(c.h), num(c.w), num(c.h), num(fontSize))
	c.rect(0, 0, c.w, c.h, `fill="#ffffff"`)
	return c
}

// WriteTo ends the document and writes it to w.
func (c *canvas) WriteTo(w io.Writer) (int64, error) {
	c.b.WriteString("</svg>\n")
	n, err := io.WriteString(w, c.b.String())
	if err != nil {
		return int64(n), fmt.Errorf("plot: writing: %w", err)
	}
	return int64(n), nil
}

// num formats a coordinate: at most two decimals, no trailing zeros.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// esc is s as XML text or attribute value (invalid characters replaced).
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

func (c *canvas) rect(x, y, w, h float64, attrs string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" %s/>`+"\n", num(x), num(y), num(w), num(h), attrs)
}

func (c *canvas) line(x1, y1, x2, y2 float64, attrs string) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`+"\n", num(x1), num(y1), num(x2), num(y2), attrs)
}

// text writes s at (x, y); anchor is start, middle or end, rotate degrees
// turn it about (x, y).
func (c *canvas) text(x, y float64, s, anchor string, size, rotate float64, attrs string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s"`, num(x), num(y))
	if anchor != "start" {
		fmt.Fprintf(&c.b, ` text-anchor="%s"`, anchor)
	}
	if size != fontSize {
		fmt.Fprintf(&c.b, ` font-size="%s"`, num(size))
	}
	if rotate != 0 {
		fmt.Fprintf(&c.b, ` transform="rotate(%s %s %s)"`, num(rotate), num(x), num(y))
	}
	if attrs != "" {
		c.b.WriteString(" " + attrs)
	}
	fmt.Fprintf(&c.b, ">%s</text>\n", esc(s))
}

// polyline draws the points (px) joined; dashed draws them dashed.
func (c *canvas) polyline(xs, ys []float64, stroke string, width float64, dashed bool) {
	c.b.WriteString(`<polyline points="`)
	for i := range xs {
		if i > 0 {
			c.b.WriteByte(' ')
		}
		c.b.WriteString(num(xs[i]) + "," + num(ys[i]))
	}
	fmt.Fprintf(&c.b, `" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"`, stroke, num(width))
	if dashed {
		c.b.WriteString(` stroke-dasharray="6 4"`)
	}
	c.b.WriteString("/>\n")
}

// markers draws an open circle at each point (px), as one path.
func (c *canvas) markers(xs, ys []float64, stroke string) {
	const r = 3.0
	c.b.WriteString(`<path d="`)
	for i := range xs {
		fmt.Fprintf(&c.b, "M%s,%sa%s,%s 0 1,0 %s,0a%s,%s 0 1,0 %s,0", num(xs[i]-r), num(ys[i]), num(r), num(r), num(2*r), num(r), num(r), num(-2*r))
	}
	fmt.Fprintf(&c.b, `" fill="#ffffff" stroke="%s" stroke-width="1.5"/>`+"\n", stroke)
}

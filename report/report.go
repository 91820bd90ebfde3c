package report

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/fleet"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/version"
)

// Options say how the page is made.
type Options struct {
	// Title heads the page ("erdmakit report" when empty).
	Title string
	// Redact replaces what identifies a host or a cloud account (host names,
	// MACs, IPv4 addresses, GIDs, GUIDs, GPU UUIDs, instance ids, the region)
	// as `erdmakit record --redact` does, consistently over all inputs.
	Redact bool
	// Generated is printed as the time the page was made (omitted when zero,
	// so that a page is reproducible).
	Generated time.Time
}

// ErrNoInput is returned by Write without an input.
var ErrNoInput = errors.New("report: no input")

// Write renders inputs as one HTML page into w.
func Write(w io.Writer, opts Options, inputs ...Input) error {
	if len(inputs) == 0 {
		return ErrNoInput
	}
	if opts.Redact {
		var err error
		if inputs, err = redactInputs(inputs); err != nil {
			return err
		}
	}
	p, err := build(opts, inputs)
	if err != nil {
		return err
	}
	vi, _ := version.Get()
	p.Version = vi.String()
	if opts.Redact {
		p.Notes = append(p.Notes, "redacted: host names, MACs, IPv4 addresses, GIDs, GUIDs, GPU UUIDs, instance ids and the region are replaced (consistently over the page)")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := pageTemplate().Execute(bw, p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return bw.Flush()
}

// Status is the page's verdict over inputs: the worst of their statuses
// (ok, warn or fail), as the page's headline gives it.
func Status(inputs ...Input) health.Severity {
	p, err := build(Options{}, inputs)
	if err != nil {
		return health.Fail
	}
	return p.Status
}

//go:embed page.html.tmpl
var pageHTML string

// scriptHash is the CSP source of the page's one inline script, the
// SHA-256 of its text: the browser runs that script and no other, so a
// script that got onto the page (were escaping ever to fail) would not
// run. The script has no template actions: its text is the template's.
var scriptHash = sync.OnceValue(func() string {
	_, rest, ok := strings.Cut(pageHTML, "<script>")
	body, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		panic("report: page.html.tmpl has no <script>") // a programming error, caught by the tests
	}
	sum := sha256.Sum256([]byte(body))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
})

// stateOf reads a status the template shows: a host's state or a
// severity (a finding's, a section's), which is a host state too.
func stateOf(v any) fleet.HostState {
	switch s := v.(type) {
	case fleet.HostState:
		return s
	case health.Severity:
		return fleet.StateOf(s)
	}
	return ""
}

// sevClass is the colour (CSS class) of a status: its severity as fleet
// counts a host state (fleet.HostState.Severity: missing and error as
// fail, not reached as skip), a stage cut short as skip, none for "".
func sevClass(v any) string {
	s := stateOf(v)
	switch s {
	case "":
		return "none"
	case fleet.HostState(stageInterrupted):
		return "skip"
	}
	return string(s.Severity())
}

// pageTemplate is parsed at its first use, not at every start of every
// binary that imports the package (a millisecond and 1,500 allocations).
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"sev":        sevClass,
		"sevrank":    func(v any) int { return stateOf(v).Order() },
		"upper":      func(s health.Severity) string { return strings.ToUpper(string(s)) },
		"anchor":     func(i int) string { return fmt.Sprintf("s%d", i) },
		"join":       strings.Join,
		"scriptHash": scriptHash,
	}).Parse(pageHTML))
})

package report

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/fleet"
)

// chromium finds Debian's chromium (.ci/deps.sh test installs it), or the
// browser $ERDMAKIT_CHROMIUM names. Without one the test skips, and fails
// under CI=true.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ERDMAKIT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: the page tests need a real browser (apt-get install chromium; .ci/deps.sh test)")
	}
	t.Skip("no chromium (apt-get install chromium)")
	return ""
}

// artefacts is where the test keeps the pages and screenshots for people
// to look at: $ERDMAKIT_ARTIFACTS when set, else the test's temporary dir.
func artefacts(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("ERDMAKIT_ARTIFACTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// browserLog is what the browser said while it showed a page: console
// errors and warnings, uncaught exceptions, browser log errors (a CSP
// violation is one), and every request but the page's own file.
type browserLog struct {
	mu       sync.Mutex
	page     string
	errors   []string
	requests []string
}

func (b *browserLog) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			b.errors = append(b.errors, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(parts, " ")))
		}
	case *runtime.EventExceptionThrown:
		b.errors = append(b.errors, fmt.Sprintf("exception: %s at %s:%d", e.ExceptionDetails.Text, e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber))
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
			b.errors = append(b.errors, fmt.Sprintf("log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		u := e.Request.URL
		if u != b.page && !strings.HasPrefix(u, "data:") {
			b.requests = append(b.requests, u)
		}
	}
}

// chromesOwn are the browser's own services (its clock, component
// updates, sign-in, optimisation hints), which it calls whatever the page:
// not the page's requests.
var chromesOwn = []string{"clients2.google.com/time/", "update.googleapis.com", "accounts.google.com:443", "optimizationguide-pa.googleapis.com:443",
	"clientservices.googleapis.com", "content-autofill.googleapis.com:443", "safebrowsing.googleapis.com"}

// proxyTrap is a proxy that answers nothing and notes who came: the
// browser sends every request there, loopback included, so a page that
// fetches anything is caught even if the DevTools events missed it.
func proxyTrap(t testing.TB) (string, func() []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var seen []string
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 512)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := c.Read(buf)
				line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
				for _, own := range chromesOwn {
					if strings.Contains(line, own) {
						return
					}
				}
				mu.Lock()
				seen = append(seen, line)
				mu.Unlock()
			}()
		}
	}()
	return l.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// shown is what the test reads back from the page's DOM.
type shown struct {
	Verdict     string      `json:"verdict"`
	VerdictH    float64     `json:"verdictH"`
	FailIDs     []string    `json:"failIDs"`
	FailHidden  int         `json:"failHidden"`
	Charts      [][]float64 `json:"charts"`
	Interactive float64     `json:"interactive"`
	Load        float64     `json:"load"`
	Overflow    float64     `json:"overflow"`
}

const readPage = `(() => {
  const v = document.getElementById("verdict");
  const nav = performance.getEntriesByType("navigation")[0];
  const fails = Array.from(document.querySelectorAll("#finding-table tr.finding[data-sev=fail]"));
  return {
    verdict: v.innerText,
    verdictH: v.getBoundingClientRect().height,
    failIDs: fails.map(r => r.querySelector("td.id").innerText.trim()),
    failHidden: fails.filter(r => r.hidden || r.querySelector("td.id").getBoundingClientRect().height === 0).length,
    charts: Array.from(document.querySelectorAll("figure.chart svg")).map(s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; }),
    interactive: nav.domInteractive,
    load: nav.loadEventEnd,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  };
})()`

// openPage loads file in a fresh headless chromium (its own profile, every
// request through the trap proxy) and returns the browser's context.
func openPage(t testing.TB, file string, width, height int) (context.Context, *browserLog, func() []string) {
	t.Helper()
	proxy, trapped := proxyTrap(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // root in CI
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		chromedp.ProxyServer("http://"+proxy),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	url := "file://" + file
	bl := &browserLog{page: url}
	require.NoError(t, chromedp.Listen(bctx, bl.listen))
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url)))
	return bctx, bl, trapped
}

// TestPageInChromium loads the page of every kind of result, and of a
// cluster, from file:// in headless chromium: no console error, no request,
// the verdict and every failing finding's id visible, every chart a
// non-zero box, the filter working, no sideways scroll on a phone. The
// screenshots stay in the artefacts for people to look at.
func TestPageInChromium(t *testing.T) {
	dir := artefacts(t)
	ins := append(fileInputs(t), fleetInputs(t, 12)...)
	p, err := build(Options{}, ins)
	require.NoError(t, err)
	var want []string
	charts := 0
	for _, f := range p.Findings {
		if sevOrder(f.Severity) >= 3 {
			want = append(want, f.ID)
		}
	}
	for _, s := range p.Sections {
		charts += len(s.Charts)
	}
	require.NotEmpty(t, want)
	file := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{Title: "erdmakit report: every kind"}, ins...))
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))

	ctx, bl, trapped := openPage(t, file, 1200, 900)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](readPage))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got.Verdict, p.Headline), "the verdict %q, not %q first", got.Verdict, p.Headline)
	assert.Positive(t, got.VerdictH)
	sort.Strings(want)
	sort.Strings(got.FailIDs)
	assert.Equal(t, want, got.FailIDs, "every failing finding's id in the DOM")
	assert.Zero(t, got.FailHidden, "failing findings not visible")
	assert.Len(t, got.Charts, charts)
	for i, c := range got.Charts {
		assert.True(t, c[0] > 0 && c[1] > 0, "chart %d has a box of %v", i, c)
	}
	t.Logf("%d charts, %d failing findings; DOM interactive %.0f ms, load %.0f ms", len(got.Charts), len(got.FailIDs), got.Interactive, got.Load)

	// The filter: a text and the severity boxes.
	visible := `Array.from(document.querySelectorAll("#finding-table tr.finding")).filter(r => !r.hidden).length`
	all, err := chromedp.Run(ctx, chromedp.Evaluate[int](visible))
	require.NoError(t, err)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const q = document.getElementById("q"); q.value = "mesh-bad-link"; q.dispatchEvent(new Event("input")); return `+visible+`; })()`))
	require.NoError(t, err)
	links := 0
	for _, f := range p.Findings {
		if f.ID == "mesh-bad-link" {
			links++
		}
	}
	assert.Positive(t, links)
	assert.Equal(t, links, n)
	n, err = chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const q = document.getElementById("q"); q.value = ""; q.dispatchEvent(new Event("input"));
	  const f = document.querySelector(".sevf[value=fail]"); f.click(); return `+visible+`; })()`))
	require.NoError(t, err)
	assert.Equal(t, all-len(want), n, "fail unchecked hides the failing findings")
	// Sorting by host, twice, keeps every row.
	n, err = chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const th = document.querySelectorAll("#finding-table th")[1]; th.click(); th.click();
	  return document.querySelectorAll("#finding-table tr.finding").length; })()`))
	require.NoError(t, err)
	assert.Equal(t, len(p.Findings), n)

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.png"), png, 0o644))

	// A phone: no sideways scroll of the page (wide tables scroll in their box).
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)))
	got, err = chromedp.Run(ctx, chromedp.Evaluate[shown](readPage))
	require.NoError(t, err)
	assert.LessOrEqual(t, got.Overflow, 0.0, "the page scrolls sideways on a 390 px screen")
	phone, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report-phone.png"), phone, 0o644))

	bl.mu.Lock()
	defer bl.mu.Unlock()
	assert.Empty(t, bl.errors, "console errors")
	assert.Empty(t, bl.requests, "requests from a page that must fetch nothing")
	assert.Empty(t, trapped(), "requests through the trap proxy")
	t.Logf("artefacts: %s", dir)
}

// The checks above can fail: a page that fetches an image is caught by
// both the request log and the CSP's console error.
func TestChromiumCatchesAFetch(t *testing.T) {
	dir := t.TempDir()
	ins := fileInputs(t)[:1]
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{}, ins...))
	bad := strings.Replace(b.String(), "<footer>", `<img src="http://203.0.113.7/x.png" alt=""><footer>`, 1)
	file := filepath.Join(dir, "fetching.html")
	require.NoError(t, os.WriteFile(file, []byte(bad), 0o644))
	ctx, bl, _ := openPage(t, file, 800, 600)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`))
	require.NoError(t, err)
	bl.mu.Lock()
	defer bl.mu.Unlock()
	assert.NotEmpty(t, bl.errors, "the CSP violation is a console error")
	assert.Contains(t, bl.requests, "http://203.0.113.7/x.png", "the request is seen")
}

// BenchmarkChromium256Hosts loads the page of a 256-host cluster (fleet
// doctor, mesh, every host's own doctor, one of every other kind) in
// headless chromium and reports, from the browser's navigation timing,
// when the page became interactive (DOM parsed, its script run) and when
// it finished loading, and how long the filter takes to run over it.
func BenchmarkChromium256Hosts(b *testing.B) {
	dir := artefacts(b)
	ins := append(append(fleetInputs(b, 256), doctorInputs(b, 256)...), fileInputs(b)...)
	var page bytes.Buffer
	require.NoError(b, Write(&page, Options{Title: "256 hosts"}, ins...))
	file := filepath.Join(dir, "report-256.html")
	require.NoError(b, os.WriteFile(file, page.Bytes(), 0o644))
	ctx, bl, _ := openPage(b, file, 1200, 900)
	var interactive, load, filter float64
	n := 0
	for b.Loop() {
		require.NoError(b, chromedp.Do(ctx, chromedp.Navigate("file://"+file)))
		got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](readPage))
		require.NoError(b, err)
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const t = performance.now(); const q = document.getElementById("q");
		  q.value = "gdr"; q.dispatchEvent(new Event("input")); q.value = ""; q.dispatchEvent(new Event("input")); return performance.now() - t; })()`))
		require.NoError(b, err)
		interactive, load, filter = interactive+got.Interactive, load+got.Load, filter+ms
		n++
	}
	b.ReportMetric(interactive/float64(n), "ms-interactive")
	b.ReportMetric(load/float64(n), "ms-load")
	b.ReportMetric(filter/float64(n)/2, "ms/filter")
	b.ReportMetric(float64(page.Len())/1e6, "MB/page")
	bl.mu.Lock()
	defer bl.mu.Unlock()
	require.Empty(b, bl.errors)
}

// The CSP runs the page's own script (its filter counts the rows) and no
// other: a script injected into the page does not run, and the browser
// says why (report-2 item 2).
func TestChromiumRunsOnlyThePagesScript(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{}, fileInputs(t)...))
	bad := strings.Replace(b.String(), "<footer>", `<script>document.body.setAttribute("data-injected","ran")</script><footer>`, 1)
	file := filepath.Join(dir, "injected.html")
	require.NoError(t, os.WriteFile(file, []byte(bad), 0o644))
	ctx, bl, _ := openPage(t, file, 800, 600)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[String(document.body.getAttribute("data-injected")), document.getElementById("shown").textContent]`))
	require.NoError(t, err)
	assert.Equal(t, "null", got[0], "the injected script ran")
	assert.Regexp(t, `^\d+ shown$`, got[1], "the page's own script ran")
	bl.mu.Lock()
	defer bl.mu.Unlock()
	require.NotEmpty(t, bl.errors, "the CSP's refusal is a console error")
	assert.Contains(t, strings.Join(bl.errors, "\n"), "Content Security Policy")
}

// flatPairs is a healthy mesh: every pair at 40 Gbit/s but one at 39.99.
type flatPairs struct{}

func (flatPairs) TestPair(_ context.Context, p fleet.Pair) fleet.PairResult {
	r := fleet.PairResult{Pair: p, Gbps: 40, Seconds: 1}
	if p.Server+p.Client == 1 {
		r.Gbps = 39.99
	}
	return r
}

// writePage renders ins into a file of the artefacts.
func writePage(t *testing.T, name string, ins ...Input) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{Title: name}, ins...))
	file := filepath.Join(artefacts(t), name+".html")
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))
	return file
}

// What a person sees (report-2 items 4, 5 and 7), in a real browser: a
// healthy mesh is one colour; a host named by two inputs is one row with
// its problems counted once; at 390 px every finding's summary, evidence
// and fix is readable without scrolling sideways, and no host name wraps.
func TestPageTellsTheTruthInChromium(t *testing.T) {
	t.Run("a healthy mesh is one colour", func(t *testing.T) {
		hosts := []string{"h1-n1", "h1-n2", "h2-n1", "h2-n2", "h3-n1", "h3-n2"}
		mesh := fleet.RunMesh(context.Background(), hosts, flatPairs{}, fleet.MeshOptions{})
		in, err := FromValue("bw-mesh.json", mesh)
		require.NoError(t, err)
		ctx, bl, _ := openPage(t, writePage(t, "healthy-mesh", in), 1400, 900)
		fills, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`(() => { const n = {};
		  document.querySelectorAll("figure.chart svg rect.cell:not(.self)").forEach(r => { const f = getComputedStyle(r).fill; n[f] = (n[f] || 0) + 1; });
		  return n; })()`))
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"rgb(69, 117, 180)": 30}, fills, "every pair of a healthy mesh in one colour")
		caption, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("figure.chart figcaption").innerText`))
		require.NoError(t, err)
		assert.Contains(t, caption, "a healthy mesh is all blue")
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(artefacts(t), "healthy-mesh.png"), png, 0o644))
		bl.mu.Lock()
		defer bl.mu.Unlock()
		assert.Empty(t, bl.errors)
	})

	t.Run("hosts counted once", func(t *testing.T) {
		ins := readInputs(t, "fleet-doctor-4.json", "fleet-prove-4.json")
		ctx, _, _ := openPage(t, writePage(t, "two-inputs", ins...), 1400, 900)
		type hostShown struct {
			Host, Status, Fail, Problems string
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]hostShown](`Array.from(document.querySelectorAll("#host-table tbody tr")).map(r =>
		  ({Host: r.cells[0].innerText, Status: r.cells[1].innerText, Fail: r.cells[2].innerText, Problems: r.cells[4].innerText}))`))
		require.NoError(t, err)
		assert.ElementsMatch(t, []hostShown{{"vm#2", "FAIL", "1", "gdr-peermem"}, {"vm#3", "FAIL", "2", "mtu prove-link"}, {"vm#1", "FAIL", "1", "prove-link"}, {"vm#0", "OK", "0", ""}}, rows)
		check, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#check-table tbody tr")).filter(r => r.cells[0].innerText === "gdr-peermem").map(r => r.cells[2].innerText + " " + r.cells[6].innerText)`))
		require.NoError(t, err)
		assert.Equal(t, []string{"1 vm#2"}, check)
		from, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#finding-table tr.finding[data-sev=fail]")).map(r => r.querySelector("td.src").innerText).join("|")`))
		require.NoError(t, err)
		assert.Contains(t, from, "fleet-prove-4.json (newer than fleet-doctor-4.json)")
	})

	t.Run("390 px: the fix is readable", func(t *testing.T) {
		ins := append(fileInputs(t), fleetInputs(t, 12)...)
		ctx, _, _ := openPage(t, writePage(t, "phone", ins...), 390, 844)
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)))
		type phone struct {
			Overflow, TableScroll, Narrowest, Cut float64
			Rows                                  int
			Wrapped                               []string
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[phone](`(() => {
		  const wrap = document.getElementById("finding-table").parentElement;
		  const texts = Array.from(document.querySelectorAll("#finding-table tr.finding td.text"));
		  let narrowest = 1e9, cut = 0;
		  texts.forEach(td => { const r = td.getBoundingClientRect(); narrowest = Math.min(narrowest, r.width);
		    cut = Math.max(cut, r.right - window.innerWidth, -r.left); });
		  const wrapped = Array.from(document.querySelectorAll("td.host, .host")).filter(e => {
		    const rg = document.createRange(); rg.selectNodeContents(e);
		    const lines = new Set(Array.from(rg.getClientRects()).map(r => Math.round(r.top)));
		    return e.innerText.trim() !== "" && lines.size > 1; }).map(e => e.innerText);
		  return {Overflow: document.documentElement.scrollWidth - window.innerWidth, TableScroll: wrap.scrollWidth - wrap.clientWidth,
		    Narrowest: narrowest, Cut: cut, Rows: texts.length, Wrapped: wrapped};
		})()`))
		require.NoError(t, err)
		require.Positive(t, got.Rows)
		assert.LessOrEqual(t, got.Overflow, 0.0, "the page scrolls sideways")
		assert.LessOrEqual(t, got.TableScroll, 0.0, "the findings scroll sideways in their box")
		assert.LessOrEqual(t, got.Cut, 0.0, "a finding's text is cut at the screen's edge")
		assert.GreaterOrEqual(t, got.Narrowest, 300.0, "the summary, evidence and fix column is too narrow to read")
		assert.Empty(t, got.Wrapped, "host names wrapped")
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(artefacts(t), "phone-390.png"), png, 0o644))
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("findings").scrollIntoView(), true)`))
		require.NoError(t, err)
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(artefacts(t), "phone-390-findings.png"), png, 0o644))
	})
}

// TestDocScreenshots draws the pictures of docs/report.md from the code:
// the page of `erdmakit report --redact report/testdata/fleet-prove-4.json`
// at 1,400 px (its first screen) and at 390 px (the verdict, then the
// findings as cards), and the heat map of a healthy mesh. With
// ERDMAKIT_DOCS set (`make report-fixtures`) they are written there, else
// to the artefacts. The pages must show the verdict on the first screen.
func TestDocScreenshots(t *testing.T) {
	dir := os.Getenv("ERDMAKIT_DOCS")
	if dir == "" {
		dir = artefacts(t)
	}
	in := readInputs(t, "fleet-prove-4.json")
	var b bytes.Buffer
	require.NoError(t, Write(&b, Options{Redact: true}, in...))
	file := filepath.Join(t.TempDir(), "fleet-prove-4.html")
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))
	shot := func(name string, width, height int, js string) {
		ctx, bl, _ := openPage(t, file, width, height)
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))))
		if js != "" {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
			require.NoError(t, err)
		}
		top, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById("verdict").getBoundingClientRect().top`))
		require.NoError(t, err)
		if js == "" {
			assert.Less(t, top, float64(height)/4, "%s: the verdict on the first screen", name)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
		bl.mu.Lock()
		defer bl.mu.Unlock()
		assert.Empty(t, bl.errors, name)
	}
	shot("report.png", 1400, 1000, "")
	shot("report-phone.png", 390, 844, "")
	shot("report-phone-findings.png", 390, 844, `(document.getElementById("findings").scrollIntoView(), true)`)
	shot("report-mesh.png", 1400, 900, `(document.querySelector("figure.chart").scrollIntoView(), true)`)
	t.Logf("pictures in %s", dir)
}

package erdma

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// ToolTimeout bounds each version query.
const ToolTimeout = 3 * time.Second

// toolSpec is a program the inventory looks for and how to ask its version
// (args nil: path only).
type toolSpec struct {
	name    string
	args    []string
	version func(out []byte) string
}

// toolSpecs are the tools of the eRDMA guide, in its order.
func toolSpecs() []toolSpec {
	return []toolSpec{
		{"eadm", []string{"ver"}, parseEadmVersion},
		{"ofed_info", []string{"-s"}, parseOFEDVersion},
		{"ib_write_bw", []string{"--version"}, parsePerftestVersion},
		{"mpirun", []string{"--version"}, parseMPIRunVersion},
		{"all_reduce_perf", nil, nil},
		{"nvidia-smi", []string{"--query-gpu=driver_version", "--format=csv,noheader"}, firstLine},
	}
}

// ToolNames are the programs the inventory reports, in order.
func ToolNames() []string {
	specs := toolSpecs()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names
}

// Tools reports the guide's programs: found on PATH (live) or in
// erdmakit/tools.json (recorded), with versions where cheap: one entry per
// tool in ToolNames order, Path "" meaning not found. A recorded host without
// tools.json gives no entries (not looked for, as with SkipTools).
func (h Host) Tools(ctx context.Context) ([]Tool, error) {
	specs := toolSpecs()
	out := make([]Tool, len(specs))
	for i, s := range specs {
		out[i].Name = s.name
	}
	if !h.live {
		var rec []Tool
		ok, err := h.readJSON(ctx, RecordedToolsFile, &rec)
		if err != nil || !ok {
			return nil, err
		}
		for i := range out {
			for _, r := range rec {
				if r.Name == out[i].Name {
					out[i] = r
				}
			}
		}
		return out, nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(specs))
	for i, s := range specs {
		p, err := exec.LookPath(s.name)
		if err != nil {
			continue
		}
		out[i].Path = p
		if s.args == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx, cancel := context.WithTimeout(ctx, ToolTimeout)
			defer cancel()
			b, err := execx.Output(tctx, p, s.args...)
			// perftest exits 1 after printing its version: use any output.
			if v := s.version(b); v != "" {
				out[i].Version = v
				return
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s %s: %w", p, strings.Join(s.args, " "), err)
			}
		}()
	}
	wg.Wait()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return out, fmt.Errorf("tools: %s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// maxVersionLen bounds a version string taken from a tool's output.
const maxVersionLen = 80

// firstLine is the first non-empty line, trimmed, at most maxVersionLen
// bytes (nvidia-smi's query output "535.161.08").
func firstLine(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			if !printable(l) {
				return ""
			}
			return truncate(l, maxVersionLen)
		}
	}
	return ""
}

// parseEadmVersion reads `eadm ver`: the first non-empty line, with a
// leading "version:"-like label removed.
func parseEadmVersion(out []byte) string {
	l := firstLine(out)
	if k, v, ok := strings.Cut(l, ":"); ok && strings.Contains(strings.ToLower(k), "ver") {
		return strings.TrimSpace(v)
	}
	return l
}

// parseOFEDVersion reads `ofed_info -s`: "MLNX_OFED_LINUX-5.4-3.6.8.1:".
func parseOFEDVersion(out []byte) string {
	return strings.TrimSuffix(firstLine(out), ":")
}

// parsePerftestVersion reads `ib_write_bw --version`: "Version: 6.06".
func parsePerftestVersion(out []byte) string {
	l := firstLine(out)
	if _, v, ok := strings.Cut(l, "Version:"); ok {
		return strings.TrimSpace(v)
	}
	return l
}

// parseMPIRunVersion reads `mpirun --version`: "mpirun (Open MPI) 4.1.4" ->
// "4.1.4" (other MPIs: the first line).
func parseMPIRunVersion(out []byte) string {
	l := firstLine(out)
	if strings.Contains(l, "Open MPI") {
		if f := strings.Fields(l); len(f) > 0 {
			return f[len(f)-1]
		}
	}
	return l
}

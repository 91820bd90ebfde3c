package lab

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Shell boots the lab (one VM, or the two-VM pair when pair is set) with
// the usual setup (eth0, rxe0, the ERDMAKIT_LAB_* environment) and runs cmd
// with `sh -c` in each, under `timeout`. The command's output goes to out
// (prefixed "[a] "/"[b] " in a pair). It returns the command's exit status
// (the first non-zero one in a pair).
func Shell(ctx context.Context, o Options, cmd string, pair bool, out io.Writer) (int, error) {
	env, err := Prepare(ctx, &o)
	if err != nil {
		return -1, err
	}
	step := func() []Step {
		return []Step{{ID: "shell", Argv: []string{"sh", "-c", cmd}, Timeout: o.timeout()}}
	}
	guests := []Guest{o.guest(RoleSingleName, IPA, "")}
	steps := [][]Step{step()}
	if pair {
		guests = []Guest{o.guest("a", IPA, IPB), o.guest("b", IPB, IPA)}
		steps = [][]Step{step(), step()}
	}
	inner := o.Console
	o.Console = &shellFilter{w: out, all: inner, pair: pair}
	boots, err := o.boot(ctx, env, guests, steps)
	code := 0
	for _, b := range boots {
		if b == nil {
			continue
		}
		for _, m := range b.Markers {
			if m.Word == "END" && len(m.Args) > 1 && m.Args[1] != "0" && code == 0 {
				fmt.Sscanf(m.Args[1], "%d", &code)
			}
		}
		o.progress("vm %s: boot %s, total %s", b.Name, b.BootTime.Round(100*time.Millisecond), b.Elapsed.Round(100*time.Millisecond))
	}
	return code, err
}

// shellFilter passes on the lines between a VM's BEGIN and END markers (the
// command's own output); with all set it passes every line there as well.
type shellFilter struct {
	mu   sync.Mutex
	w    io.Writer
	all  io.Writer
	pair bool
	in   map[string]bool
}

func (f *shellFilter) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.in == nil {
		f.in = map[string]bool{}
	}
	if f.all != nil {
		f.all.Write(b)
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		vm, rest := "", line
		if strings.HasPrefix(line, "[") {
			if i := strings.Index(line, "] "); i > 0 {
				vm, rest = line[1:i], line[i+2:]
			}
		}
		if m, ok := ParseMarker(rest); ok {
			switch m.Word {
			case "BEGIN":
				f.in[vm] = true
			case "END":
				f.in[vm] = false
			}
			continue
		}
		if !f.in[vm] {
			continue
		}
		if !f.pair {
			line = rest
		}
		if _, err := io.WriteString(f.w, line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// MaxTotalBytes bounds all the inputs of one page together (ReadFiles):
// reading and decoding JSON costs seven to eleven times its size in memory
// and about 3.5 CPU-seconds per 100 MiB (two bw mesh reports of 640 hosts,
// 106 MiB: 720 MB, 3.8 CPU-s), so the sum, not only each file, is what
// keeps `erdmakit report` under a gigabyte and seconds. A 256-host fleet
// prove, fleet doctor and bw mesh together are about 12 MB.
const MaxTotalBytes = 128 << 20

// ErrTooLarge is wrapped when an input, or the inputs together, are
// larger than their bound (MaxInputBytes, MaxTotalBytes).
var ErrTooLarge = errors.New("too large for one page")

// ReadFiles reads the JSON of erdmakit results, each at most
// MaxInputBytes and all of them together at most MaxTotalBytes, and makes
// one Input per path, in order, its Time the file's modification time
// (the page shows the newest input's word on a host); "-" is read from
// stdin (at most once).
// Regular files are measured before any is read, so inputs over the bound
// are refused at once; a pipe or FIFO counts what it gave. It gives up
// when ctx ends. An error names the file and, for the bound, the limit.
func ReadFiles(ctx context.Context, stdin io.Reader, paths ...string) ([]Input, error) {
	return readFiles(ctx, stdin, MaxInputBytes, MaxTotalBytes, paths)
}

func readFiles(ctx context.Context, stdin io.Reader, each, total int64, paths []string) ([]Input, error) {
	var sum int64
	stdinSeen := false
	for _, p := range paths {
		if p == "-" {
			if stdinSeen {
				return nil, errors.New("stdin (-) named twice: it can be read once")
			}
			stdinSeen = true
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue // a FIFO, /dev/stdin: counted as it is read
		}
		if fi.Size() > each {
			return nil, fmt.Errorf("%s: %s, larger than %s (report.MaxInputBytes): %w", p, mib(fi.Size()), mib(each), ErrTooLarge)
		}
		sum += fi.Size()
		if sum > total {
			return nil, fmt.Errorf("%s: the inputs up to it are %s together, more than %s (report.MaxTotalBytes) one page reads: %w; render fewer at once",
				p, mib(sum), mib(total), ErrTooLarge)
		}
	}
	ins := make([]Input, 0, len(paths))
	var read int64
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		limit := min(each, total-read)
		var b []byte
		var err error
		name := p
		if p == "-" {
			name = "stdin"
			b, err = io.ReadAll(io.LimitReader(ctxio.NewReader(ctx, stdin), limit+1))
			if err == nil && int64(len(b)) > limit {
				err = ctxio.ErrTooLarge
			}
		} else {
			b, err = ctxio.ReadFile(ctx, p, limit)
		}
		if errors.Is(err, ctxio.ErrTooLarge) {
			if limit < each {
				return nil, fmt.Errorf("%s: the inputs up to it are more than %s (report.MaxTotalBytes) together: %w; render fewer at once", name, mib(total), ErrTooLarge)
			}
			return nil, fmt.Errorf("%s: larger than %s (report.MaxInputBytes): %w", name, mib(each), ErrTooLarge)
		}
		if err != nil {
			if p == "-" {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			return nil, err
		}
		read += int64(len(b))
		in, err := FromJSON(name, b)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(p); p != "-" && err == nil && fi.Mode().IsRegular() {
			in.Time = fi.ModTime()
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// mib says a size in MiB (to a tenth below 10; bytes below one).
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	if n < 10<<20 && n%(1<<20) != 0 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

package perftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/connect"
	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/hostfs"
)

// DefaultPort is perftest's out-of-band port; the n-th device of a run uses
// DefaultPort+n (the guide's two-NIC recipe: one process pair per device,
// distinct ports).
const DefaultPort = 18515

// Options is an ib_write_bw run: the eRDMA guide's recipe
// (`ib_write_bw -d erdma_0 -F -q 16 --report_gbits -p 18515`) with
// perftest's knobs.
type Options struct {
	// Binary is the program (default "ib_write_bw" from PATH).
	Binary  string
	Devices []string
	// Server is the server's address for the clients. "" runs the servers
	// here too (loopback): then the clients connect to LoopbackAddr.
	Server string
	// LoopbackAddr is where loopback clients connect (default 127.0.0.1;
	// with rdma_cm it must be an address of the device: the runner takes the
	// device's IPv4 GID when it is empty).
	LoopbackAddr string
	// Port is the first device's port (default 18515).
	Port       int
	QPs        int           // -q (default 16, as the guide)
	Size       int           // -s (0: perftest's 65536)
	All        bool          // -a
	Iterations int           // -n (0: perftest's default)
	Duration   time.Duration // -D in whole seconds (0: iterations mode)
	GIDIndex   int           // -x; < 0: perftest's choice
	// Method is how the QPs connect: connect.RDMACM adds -R, connect.OOB
	// leaves it out, connect.Auto (the zero value) decides per device by
	// its transport under Root (-R for iWARP only, as bw does).
	Method connect.Method
	// Extra arguments go to both sides, after ours.
	Extra []string
	// ConnectRetries is how often a client is retried when the server is
	// not listening yet ("Couldn't connect"); default 5, RetryDelay 1 s apart.
	ConnectRetries int
	RetryDelay     time.Duration
	// Timeout bounds each pair (default: Duration + 60 s, or 120 s).
	Timeout time.Duration
	// Root is the host root for the device's GIDs ("/" when empty).
	Root string
	// MBPerSec leaves out --report_gbits: ib_write_bw then prints MiB/s
	// with two decimals, a thousand times finer than Gb/s's two (0.47 Gb/s
	// is 56.03 MB/sec); the results are converted to Gbit/s either way.
	// For comparisons within a percent at low rates (perf/internal/bwbench).
	MBPerSec bool

	// latency: ib_write_lat's arguments (RunWriteLat, ServeWriteLat).
	latency bool
}

// Run is one device's server/client pair.
type Run struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Args are the client's arguments (the server's lack the address).
	Args   []string `json:"args"`
	Client *Report  `json:"client,omitempty"`
	Server *Report  `json:"server,omitempty"`
	// Attempts is how many times the client was started.
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// Args builds ib_write_bw's argument list for device dev on port; server
// is "" for the server side. connect.Auto is taken as OOB here: the runners
// resolve it per device before calling Args.
func (o Options) Args(dev string, port int, server string) []string {
	a := []string{"-d", dev, "-F"}
	if !o.latency && !o.MBPerSec { // ib_write_lat's table is in usec whatever the units
		a = append(a, "--report_gbits")
	}
	a = append(a, "-p", strconv.Itoa(port))
	if !o.latency { // ib_write_lat runs one QP
		a = append(a, "-q", strconv.Itoa(max(o.QPs, 1)))
	}
	if o.All {
		a = append(a, "-a")
	} else if o.Size > 0 {
		a = append(a, "-s", strconv.Itoa(o.Size))
	}
	if o.Duration > 0 {
		a = append(a, "-D", strconv.Itoa(max(int(o.Duration.Round(time.Second)/time.Second), 1)))
	} else if o.Iterations > 0 {
		a = append(a, "-n", strconv.Itoa(o.Iterations))
	}
	if o.GIDIndex >= 0 {
		a = append(a, "-x", strconv.Itoa(o.GIDIndex))
	}
	if o.Method == connect.RDMACM {
		a = append(a, "-R")
	}
	a = append(a, o.Extra...)
	if server != "" {
		a = append(a, server)
	}
	return a
}

func (o Options) withDefaults() Options {
	if o.Binary == "" {
		o.Binary = "ib_write_bw"
		if o.latency {
			o.Binary = "ib_write_lat"
		}
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.QPs == 0 {
		o.QPs = 16
	}
	if o.ConnectRetries == 0 {
		o.ConnectRetries = 5
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 120 * time.Second
		if o.Duration > 0 {
			o.Timeout = o.Duration + 60*time.Second
		}
	}
	if o.Root == "" {
		o.Root = "/"
	}
	return o
}

// RunWriteBW runs one ib_write_bw pair per device, all devices in parallel,
// each on its own port: servers here too unless o.Server names a remote
// one. Every process runs as argv in its own process group, ended when ctx
// is cancelled or the pair's timeout passes.
func RunWriteBW(ctx context.Context, o Options) []Run {
	o = o.withDefaults()
	runs := make([]Run, len(o.Devices))
	var wg sync.WaitGroup
	for i, dev := range o.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = o.pair(ctx, dev, o.Port+i)
		}()
	}
	wg.Wait()
	return runs
}

// ServeWriteBW runs only the servers (the remote side of RunWriteBW with
// Options.Server set), one per device, and returns when all have ended.
func ServeWriteBW(ctx context.Context, o Options) []Run {
	o = o.withDefaults()
	runs := make([]Run, len(o.Devices))
	var wg sync.WaitGroup
	for i, dev := range o.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			port := o.Port + i
			od := o.forDevice(ctx, dev)
			r := Run{Device: dev, Port: port, Args: od.Args(dev, port, "")}
			out, err := od.exec(ctx, r.Args)
			r.Server, err = parseOutput(out, err)
			if err != nil {
				r.Error = err.Error()
			}
			runs[i] = r
		}()
	}
	wg.Wait()
	return runs
}

// RunWriteLat is RunWriteBW for ib_write_lat (Binary defaults to it):
// `ib_write_lat -d DEV -F -p PORT` with Size (-s; perftest's default 2),
// All (-a), Iterations (-n; default 1000), Duration (-D), GIDIndex (-x),
// Method (-R) and Extra; QPs does not apply. The devices run one after the
// other, not in parallel: latency tests side by side would measure each
// other.
func RunWriteLat(ctx context.Context, o Options) []Run {
	o.latency = true
	o = o.withDefaults()
	runs := make([]Run, len(o.Devices))
	for i, dev := range o.Devices {
		runs[i] = o.pair(ctx, dev, o.Port+i)
	}
	return runs
}

// ServeWriteLat runs only ib_write_lat servers, one per device (each on
// its port, in parallel: they wait for their clients), and returns when all
// have ended.
func ServeWriteLat(ctx context.Context, o Options) []Run {
	o.latency = true
	return ServeWriteBW(ctx, o)
}

func (o Options) pair(ctx context.Context, dev string, port int) Run {
	o = o.forDevice(ctx, dev)
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	addr := o.Server
	r := Run{Device: dev, Port: port}
	var (
		srvOut  []byte
		srvErr  error
		srvDone chan struct{}
	)
	if addr == "" {
		addr = o.LoopbackAddr
		if addr == "" && o.Method == connect.RDMACM {
			ip, err := deviceIPv4(ctx, o.Root, dev)
			if err != nil {
				r.Error = err.Error()
				return r
			}
			addr = ip
		}
		if addr == "" {
			addr = "127.0.0.1"
		}
		srvDone = make(chan struct{})
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		listening := make(chan struct{})
		go func() {
			defer close(srvDone)
			srvOut, srvErr = o.execWatch(sctx, o.Args(dev, port, ""), "Waiting for client", listening)
		}()
		// ib_write_bw prints its banner once it listens; do not probe the
		// port (the server takes the first connection as its client).
		select {
		case <-listening:
		case <-srvDone:
		case <-time.After(2 * time.Second):
		}
	}
	r.Args = o.Args(dev, port, addr)
	var cliOut []byte
	var cliErr error
	for r.Attempts = 1; ; r.Attempts++ {
		cliOut, cliErr = o.exec(ctx, r.Args)
		if cliErr == nil || !notListening(cliOut) || r.Attempts > o.ConnectRetries || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(o.RetryDelay):
		case <-ctx.Done():
		}
	}
	var err error
	r.Client, err = parseOutput(cliOut, cliErr)
	errs := []error{err}
	if srvDone != nil {
		select {
		case <-srvDone:
		case <-time.After(10 * time.Second):
			cancel() // the server did not end after its client: end its group
			<-srvDone
		}
		r.Server, err = parseOutput(srvOut, srvErr)
		if r.Client == nil || !r.Client.OK() {
			errs = append(errs, prefix("server", err))
		}
	}
	if e := errors.Join(errs...); e != nil {
		r.Error = e.Error()
	}
	return r
}

func prefix(side string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", side, err)
}

// notListening: the client's output says the server was not there yet.
func notListening(out []byte) bool {
	return bytes.Contains(out, []byte("Couldn't connect")) || bytes.Contains(out, []byte("Unable to init the socket connection"))
}

// maxOutput bounds what is kept of one process's output.
const maxOutput = 4 << 20

// exec runs the binary with args and returns its combined output.
func (o Options) exec(ctx context.Context, args []string) ([]byte, error) {
	return o.execWatch(ctx, args, "", nil)
}

// execWatch is exec that closes seen once the output contains marker.
func (o Options) execWatch(ctx context.Context, args []string, marker string, seen chan<- struct{}) ([]byte, error) {
	cmd := execx.Command(ctx, o.Binary, args...)
	w := &watchBuffer{marker: []byte(marker), seen: seen}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	if err != nil {
		err = &execx.RunError{Name: o.Binary, Err: err}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
	}
	return w.bytes(), err
}

// watchBuffer keeps up to maxOutput bytes and signals a marker once.
type watchBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker []byte
	seen   chan<- struct{}
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := maxOutput - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	if w.seen != nil && len(w.marker) > 0 && bytes.Contains(w.buf.Bytes(), w.marker) {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

func (w *watchBuffer) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// parseOutput parses one process's output; a process that failed without
// printing a report gives its error and the output's last lines.
func parseOutput(out []byte, runErr error) (*Report, error) {
	rep, perr := Parse(context.Background(), bytes.NewReader(out)) // in memory: nothing to cancel
	if perr != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%w: %s", runErr, tail(out, 5))
		}
		return nil, fmt.Errorf("no perftest report in its output: %w: %s", perr, tail(out, 5))
	}
	if runErr != nil && len(rep.Errors) == 0 {
		rep.Errors = append(rep.Errors, runErr.Error())
	}
	return rep, nil
}

func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// deviceIPv4 returns the IPv4 address in dev's port 1 GID table (rdma_cm
// needs an address of the device).
// forDevice is o with its Method resolved for dev's transport.
func (o Options) forDevice(ctx context.Context, dev string) Options {
	if o.Method == connect.Auto {
		o.Method = o.Method.Resolve(deviceTransport(ctx, o.Root, dev))
	}
	return o
}

// deviceTransport reads dev's personality from its node_type and port 1's
// link_layer under root; connect.UnknownTransport when they cannot be read.
func deviceTransport(ctx context.Context, root, dev string) connect.Transport {
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return connect.UnknownTransport
	}
	defer r.Close()
	dir := path.Join("sys/class/infiniband", dev)
	b, err := r.ReadFile(path.Join(dir, "node_type"), 256)
	if err != nil {
		return connect.UnknownTransport
	}
	code, _, _ := strings.Cut(strings.TrimSpace(string(b)), ":")
	n, err := strconv.Atoi(code)
	if err != nil {
		return connect.UnknownTransport
	}
	ll, _ := r.ReadFile(path.Join(dir, "ports/1/link_layer"), 256)
	return connect.TransportOf(n, strings.TrimSpace(string(ll)))
}

func deviceIPv4(ctx context.Context, root, dev string) (string, error) {
	r, err := hostfs.OpenContext(ctx, root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	dir := path.Join("sys/class/infiniband", dev, "ports/1/gids")
	ents, err := r.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("%s: reading GIDs for its address: %w", dev, err)
	}
	for _, e := range ents {
		b, err := r.ReadFile(path.Join(dir, e.Name()), 4096)
		if err != nil {
			continue
		}
		g := strings.TrimSpace(string(b))
		if ip, ok := mappedIPv4(g); ok {
			return ip, nil
		}
	}
	return "", fmt.Errorf("%s has no IPv4 GID: give its netdev an address, or pass the address", dev)
}

// mappedIPv4 reads "0000:0000:0000:0000:0000:ffff:0a00:0901" as 10.0.9.1.
func mappedIPv4(gid string) (string, bool) {
	const prefix = "0000:0000:0000:0000:0000:ffff:"
	if !strings.HasPrefix(gid, prefix) || len(gid) != len(prefix)+9 {
		return "", false
	}
	h := strings.ReplaceAll(gid[len(prefix):], ":", "")
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff), true
}

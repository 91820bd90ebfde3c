package ncclog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// ErrNoNCCLLines is returned by Analyze when the input has no line NCCL prints.
var ErrNoNCCLLines = errors.New("no NCCL log lines found")

// Summary is what an NCCL_DEBUG=INFO log says about the network NCCL
// chose. Its JSON names are a public schema.
type Summary struct {
	NCCLVersion string `json:"nccl_version"` // "NCCL version 2.21.5+cuda12.4" -> "2.21.5"
	// Network is what "Using network X" says: "IB", "Socket" or a plugin's
	// name ("AWS Libfabric"); when no such line is present it is inferred
	// from the channel transports ("IB" or "Socket"), else empty.
	Network          string     `json:"network"`
	IBDevices        []IBDevice `json:"ib_devices"`        // "NET/IB : Using [0]erdma_0:1/RoCE ..."
	SocketInterfaces []string   `json:"socket_interfaces"` // "NET/Socket : Using [0]eth0:10.0.0.1<0>"
	GDR              GDR        `json:"gdr"`
	// Channels counts the channel connection lines ("Channel 00/0 : 0[0] ->
	// 1[1] via NET/IB/0/GDRDMA") per transport: "NET/IB", "NET/Socket",
	// "NET/<plugin>", "P2P", "SHM", "CollNet"... The first four are always present.
	Channels       map[string]int `json:"channels"`
	GDRDMAChannels int            `json:"gdrdma_channels"` // channel lines with /GDRDMA
	// Warnings are the NCCL WARN messages, deduplicated (at most 64 distinct).
	Warnings []string `json:"warnings"`

	// Networks lists every distinct "Using network" value when ranks disagree.
	Networks []string `json:"networks,omitempty"`
	// IBNoDevice is true when NCCL printed "NET/IB : No device found.".
	IBNoDevice bool `json:"ib_no_device"`
	// IBRelaxedOrdering is the "[RO]" flag of the NET/IB Using line.
	IBRelaxedOrdering bool `json:"ib_relaxed_ordering,omitempty"`
	// OOBInterface and OOBAddress are the NET/IB line's "OOB eth0:10.0.0.1<0>".
	OOBInterface string `json:"oob_interface,omitempty"`
	OOBAddress   string `json:"oob_address,omitempty"`
	// BootstrapInterface is "Bootstrap : Using eth0:10.0.0.1<0>".
	BootstrapInterface string `json:"bootstrap_interface,omitempty"`
	// Plugins are the net plugins NCCL initialised ("Initialized NET plugin X").
	Plugins []string `json:"plugins,omitempty"`
	// PluginErrors are plugin load or init failures ("NET/Plugin : Plugin
	// load returned 17 : libnccl-net.so: cannot open shared object file...").
	PluginErrors []string `json:"plugin_errors,omitempty"`
	// Env holds the NCCL_* variables NCCL reported ("NCCL_IB_HCA set to X",
	// "NCCL_SOCKET_IFNAME set by environment to eth0").
	Env map[string]string `json:"env,omitempty"`
	// NRanks is the "nranks N" of the "comm 0x... rank 0 nranks 16 ..." line.
	NRanks int `json:"nranks,omitempty"`
	// QPCreateFailures counts "Call to ibv_create_qp failed" warnings.
	QPCreateFailures int `json:"qp_create_failures,omitempty"`
	// MemlockSuspect is true when a verbs call failed with ENOMEM ("Unknown
	// error -12", "Cannot allocate memory"): on eRDMA hosts the cause has been
	// a locked-memory limit too low (LimitMEMLOCK=64K); the fix is ulimit -l unlimited.
	MemlockSuspect bool `json:"memlock_suspect,omitempty"`
	// NCCLLines is how many lines NCCL printed (INFO, WARN, version).
	NCCLLines int64 `json:"nccl_lines"`

	// Transport is the answer to "RDMA or sockets?": the one place it is
	// decided (from Network, Networks, Channels and IBDevices).
	Transport NetTransport `json:"transport"`
	// NICs is the use of each NET/IB net device: channels, GDRDMA
	// channels, the GIDs its queue pairs used (log_nic.go).
	NICs []NICUse `json:"nics"`
	// NICSpread says whether every listed NET/IB device carried channels
	// (NICBalance).
	NICSpread NICBalance `json:"nic_balance"`
	// DMABUFGPUs are the GPU devices of "DMA-BUF is available on GPU
	// device N": NCCL registers GPU memory through DMA-BUF there when the
	// NIC takes it (GPU Direct RDMA Enabled), no nvidia_peermem needed.
	DMABUFGPUs []int `json:"dmabuf_gpus,omitempty"`
	// HostPeerMem is not read from the log: the caller sets what the hosts
	// had loaded ("nvidia_peermem", "nv_peer_mem", "memory_peers"; "none"
	// for no peer-memory module; "" not known). NCCL prints "DMA-BUF is
	// available" from the GPU's CUDA attribute alone (src/init.cc
	// dmaBufSupported), so only with no peer-memory module and an HCA with
	// "GPU Direct RDMA Enabled" does the log show GDR through DMA-BUF.
	HostPeerMem string `json:"host_peer_mem,omitempty"`
}

// IBDevice is one "[0]erdma_0:1/RoCE" entry of the NET/IB Using line.
type IBDevice struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Port  int    `json:"port"`
	Link  string `json:"link"` // "IB" or "RoCE"
}

// GDR lists the HCAs of "NET/IB : GPU Direct RDMA Enabled|Disabled for HCA n 'name'".
type GDR struct {
	Enabled  []string `json:"enabled"`
	Disabled []string `json:"disabled"`
}

// Analyze reads an NCCL_DEBUG=INFO log from r in constant memory. It
// returns ErrNoNCCLLines (wrapped) when r has no NCCL line, and a read error
// if r fails. Lines may carry any prefix (mpirun's "[1,0]<stdout>:", Ray's
// "(RayWorkerWrapper pid=...) ", "host:pid:tid [dev] "): what NCCL printed
// is found inside the line.
//
// The log is scanned in parallel: chunks of whole lines go to one worker per
// CPU (GOMAXPROCS), each analyses its chunk alone, and the chunks' analyses
// are merged in file order, so the result is what one pass line by line
// finds. Memory is a few chunks per worker, whatever the
// size of the log; a line longer than a chunk (1 MiB) is cut to its first
// MiB.
func Analyze(ctx context.Context, r io.Reader) (*Summary, error) {
	a, err := analyze(ctx, r, chunkSize, runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, fmt.Errorf("reading NCCL log: %w", err)
	}
	s := a.Summary()
	if s.NCCLLines == 0 {
		return nil, fmt.Errorf("NCCL log: %w", ErrNoNCCLLines)
	}
	return s, nil
}

// block analyses a run of whole lines (each ending in '\n', except the last
// at the end of the input). Like grep, it searches the block for what NCCL
// prints ("NCCL ", "NET/": findNCCL, vectorised) and only there takes the
// line's end, found by the same search, so lines without it cost only
// their share of that search. (Lines are not counted: a count would be a
// second pass over every byte.)
func (a *Analyzer) block(b []byte) {
	for i := 0; i < len(b); {
		at, eol := findNCCL(b[i:])
		if at < 0 {
			return
		}
		at += i
		next, end := len(b), len(b)
		if eol >= 0 {
			end = i + eol
			next = end + 1
		}
		m := b[at:end] // from the candidate to the line's end
		switch {
		case len(m) >= 5 && string(m[:5]) == "NCCL ":
			// "NCCL INFO msg": the message is handled in place, no line
			// start is needed.
			m = m[5:]
			// Literal comparisons compile to one or two loads; HasPrefix
			// with a variable is a call (a tenth of the scan's time).
			var kind byte
			switch {
			case len(m) >= 5 && string(m[:5]) == "INFO ":
				m, kind = m[5:], 'I'
			case len(m) >= 5 && string(m[:5]) == "WARN ":
				m, kind = m[5:], 'W'
			case len(m) >= 8 && string(m[:8]) == "version ":
				m, kind = m[8:], 'V'
			default:
				i = at + 1
				continue
			}
			if m = trimCR(m); kind == 'I' {
				a.info1(m)
			} else {
				a.message(m, kind)
			}
			i = next
		case len(m) >= 4 && string(m[:4]) == "NET/":
			// A bare "NET/..." line (or one where NCCL's prefix comes
			// later). The line before at holds no NCCL message (the search
			// passed it), so only the rest of the line is looked at.
			m = trimCR(m)
			if msg, kind := prefixedMessage(m[1:]); kind != 0 {
				a.message(msg, kind) // NCCL's own message wins, as in ncclMessage
			} else {
				if at >= 4 && string(b[at-4:at]) == "via " {
					m = b[at-4 : at+len(m)]
				}
				a.info1(m)
			}
			i = next
		default:
			i = at + 1
		}
	}
}

// info1 is message(msg, 'I') through the worker's memo: an idempotent
// message analysed before changes nothing but the count of NCCL's lines
// (logmemo.go).
func (a *Analyzer) info1(msg []byte) {
	switch {
	case a.memo == nil:
		a.message(msg, 'I')
	case a.memo.seen(msg):
		a.s.NCCLLines++
	default:
		a.message(msg, 'I')
		if idempotent(msg) {
			a.memo.add(msg)
		}
	}
}

// read reads at least one byte into p, or returns an error (io.EOF at the
// end); a reader that keeps returning nothing gets io.ErrNoProgress.
func read(r io.Reader, p []byte) (int, error) {
	for range 100 {
		n, err := r.Read(p)
		if n > 0 {
			if err == io.EOF {
				err = nil // the next call returns EOF again
			}
			return n, err
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, io.ErrNoProgress
}

// readBuf is the read buffer of the line-by-line parsers (nccl-tests
// results); a line longer than this is cut to its first readBuf bytes (the
// rest of it is skipped).
const readBuf = 256 << 10

// eachLineBytes calls fn with each line of r without its line ending ("\n"
// or "\r\n"). The slice is only valid during the call. It reads r in large
// blocks and allocates nothing per line.
func eachLineBytes(r io.Reader, size int, fn func(line []byte)) error {
	buf := make([]byte, size)
	n := 0        // bytes held in buf
	skip := false // inside an overlong line, discarding up to its end
	eof := false
	for !eof {
		k, err := read(r, buf[n:])
		n += k
		switch {
		case err == io.EOF:
			eof = true
		case err != nil:
			return err
		}
		data := buf[:n]
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if skip {
				skip = false
			} else {
				fn(trimCR(data[:i]))
			}
			data = data[i+1:]
		}
		switch {
		case eof && len(data) > 0 && !skip:
			fn(trimCR(data))
		case len(data) == len(buf):
			if !skip {
				fn(data) // an overlong line: its first readBuf bytes
			}
			skip = true
			data = data[:0]
		}
		n = copy(buf, data)
	}
	return nil
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// Bounds that keep the analyser's memory constant whatever the log.
const (
	maxListed   = 256 // devices, interfaces, HCAs, plugins, env variables
	maxWarnings = 64  // distinct warnings
	maxTextLen  = 512 // bytes kept of one warning or error text

	maxOtherChannels = 32 // channel transports besides NET/IB, NET/Socket, P2P and SHM
)

// Analyzer analyses NCCL log lines fed one at a time; Analyze and the
// nccl-tests parser are built on it. Its memory is bounded (at most 256
// entries per list, 64 distinct warnings). Use NewAnalyzer.
type Analyzer struct {
	s Summary
	// channel counts by transport; the common four without a map lookup
	chIB, chSocket, chP2P, chSHM int
	chOther                      map[string]*int
	chOtherKeys                  []string // the keys of chOther, in the order seen
	// NET/IB and NET/Socket "Using" lines already parsed (every rank
	// prints the same): a repeat costs one hash lookup
	seenIB, seenSocket map[string]struct{}
	envKeys            []string // the keys of s.Env, in the order seen
	nic                nicStats
	// memo, in the analyser of a chunk, is its worker's memory of the
	// idempotent messages it analysed (logmemo.go); nil elsewhere.
	memo *lineMemo
	// chunk marks the analyser of one chunk of a parallel scan: it counts
	// every channel transport (its chunk bounds them), so that merge can
	// add the counts of a transport that an earlier chunk listed.
	chunk bool
}

// seenLine reports whether line is in seen, and adds it (up to maxListed lines).
func seenLine(seen map[string]struct{}, line []byte) bool {
	if _, ok := seen[string(line)]; ok {
		return true
	}
	if len(seen) < maxListed && len(line) <= maxTextLen {
		seen[string(line)] = struct{}{}
	}
	return false
}

// NewAnalyzer returns an analyser with nothing seen.
func NewAnalyzer() *Analyzer {
	return &Analyzer{chOther: map[string]*int{}, seenIB: map[string]struct{}{}, seenSocket: map[string]struct{}{}}
}

var (
	bNCCLVersion = []byte("NCCL version ")
	bViaBare     = []byte("via ")
	bINFO        = []byte("INFO ")
	bWARN        = []byte("WARN ")
	bVersion     = []byte("version ")
	bUsingNet    = []byte("Using network ")
	bAssigned    = []byte("Assigned NET plugin ")
	bInitPlug    = []byte("Initialized NET plugin ")
	bIBUsing     = []byte("NET/IB : Using")
	bIBNoDev     = []byte("NET/IB : No device found")
	bGDR         = []byte(" : GPU Direct RDMA ")
	bSockUsing   = []byte("NET/Socket : Using")
	bPlugin      = []byte("NET/Plugin")
	bBootstrap   = []byte("Bootstrap")
	bSetByEnv    = []byte(" set by environment to ")
	bSetTo       = []byte(" set to ")
	bNRanks      = []byte(" nranks ")
	bGDRDMA      = []byte("/GDRDMA")
	bOOB         = []byte("; OOB ")
	bCreateQP    = []byte("ibv_create_qp")
	bENOMEM1     = []byte("error -12")
	bENOMEM2     = []byte("Cannot allocate memory")
	bIbv         = []byte("ibv_")
	bArrow       = []byte(" -> ")
)

// Feed analyses one line (without its newline); it does not keep line.
// It reports whether the line was recognised as one NCCL printed.
func (a *Analyzer) Feed(line []byte) bool {
	return a.feed(line)
}

// feed is Feed without counting the line.
func (a *Analyzer) feed(line []byte) bool {
	msg, kind := ncclMessage(line)
	if kind == 0 {
		return false
	}
	a.message(msg, kind)
	return true
}

// message handles what NCCL printed, of kind 'I', 'W' or 'V'.
func (a *Analyzer) message(msg []byte, kind byte) {
	a.s.NCCLLines++
	switch kind {
	case 'W':
		a.warning(msg)
	case 'V':
		a.version(msg)
	default:
		a.info(msg)
	}
}

// ncclMessage finds what NCCL printed in line: kind 'I' (an INFO message or a
// bare NET/ line; other lines quoted without "NCCL INFO", such as a lone
// "Using network IB", are not NCCL's), 'W' (a WARN message) or 'V' (the version, msg is
// "2.21.5+cuda12.4"); kind 0 for other lines.
func ncclMessage(line []byte) (msg []byte, kind byte) {
	// One pass over the line for 'N': "NCCL " (INFO, WARN, version) or a
	// bare "NET/" (lines quoted without NCCL's prefix). Lines without 'N'
	// (nccl-tests rows, most noise) cost one vectorised byte search.
	var bare []byte
	for i := 0; ; {
		j := bytes.IndexByte(line[i:], 'N')
		if j < 0 {
			break
		}
		i += j
		m := line[i:]
		if len(m) >= 5 && m[1] == 'C' && m[2] == 'C' && m[3] == 'L' && m[4] == ' ' {
			m = m[5:]
			switch {
			case bytes.HasPrefix(m, bINFO):
				return m[len(bINFO):], 'I'
			case bytes.HasPrefix(m, bWARN):
				return m[len(bWARN):], 'W'
			case bytes.HasPrefix(m, bVersion):
				return m[len(bVersion):], 'V'
			}
		} else if bare == nil && len(m) >= 4 && m[1] == 'E' && m[2] == 'T' && m[3] == '/' {
			bare = m
			if i >= 4 && string(line[i-4:i]) == "via " {
				bare = line[i-4:]
			}
		}
		i++
	}
	if bare != nil {
		return bare, 'I'
	}
	return nil, 0
}

// prefixedMessage is ncclMessage for "NCCL INFO", "NCCL WARN" and "NCCL
// version" alone: the first of them in line, or kind 0.
func prefixedMessage(line []byte) (msg []byte, kind byte) {
	for i := 0; ; i++ {
		j := bytes.IndexByte(line[i:], 'N')
		if j < 0 {
			return nil, 0
		}
		i += j
		m := line[i:]
		if len(m) >= 5 && string(m[1:5]) == "CCL " {
			m = m[5:]
			switch {
			case len(m) >= 5 && string(m[:5]) == "INFO ":
				return m[5:], 'I'
			case len(m) >= 5 && string(m[:5]) == "WARN ":
				return m[5:], 'W'
			case len(m) >= 8 && string(m[:8]) == "version ":
				return m[8:], 'V'
			}
		}
	}
}

// version takes "2.21.5+cuda12.4" -> "2.21.5".
func (a *Analyzer) version(v []byte) {
	if a.s.NCCLVersion != "" {
		return
	}
	if i := bytes.IndexAny(v, "+ \t"); i >= 0 {
		v = v[:i]
	}
	if len(v) > 0 && len(v) <= 32 {
		a.s.NCCLVersion = string(v)
	}
}

func (a *Analyzer) info(msg []byte) {
	if len(msg) == 0 {
		return
	}
	// Dispatch on the first byte: most lines are decided by one comparison.
	switch msg[0] {
	case 'C':
		if len(msg) >= 8 && string(msg[:8]) == "Channel " {
			a.channel(msg)
		}
	case 'v':
		if hasPrefix(msg, "via ") {
			a.channel(msg)
		}
	case 'N':
		switch {
		case hasPrefix(msg, "NET/"):
			a.net(msg)
		case hasPrefix(msg, "NCCL_"):
			a.env(msg)
		case bytes.HasPrefix(msg, bNCCLVersion):
			a.version(msg[len(bNCCLVersion):])
		}
	case 'U':
		if bytes.HasPrefix(msg, bUsingNet) {
			a.network(msg[len(bUsingNet):])
		}
	case 'A':
		if bytes.HasPrefix(msg, bAssigned) {
			n := msg[len(bAssigned):]
			if i := bytes.Index(n, []byte(" to comm")); i >= 0 {
				a.network(n[:i])
			}
		}
	case 'I':
		if bytes.HasPrefix(msg, bInitPlug) {
			a.addText(&a.s.Plugins, bytes.TrimSpace(msg[len(bInitPlug):]))
		}
	case 'p':
		if hasPrefix(msg, "plugin/") && bytes.Contains(msg, bArrow) {
			a.addText(&a.s.PluginErrors, msg)
		}
	case 'B':
		if a.s.BootstrapInterface == "" && bytes.HasPrefix(msg, bBootstrap) {
			if i := bytes.Index(msg, []byte("Using ")); i >= 0 {
				a.s.BootstrapInterface = string(ifaceName(msg[i+len("Using "):]))
			}
		}
	case 'D':
		if bytes.HasPrefix(msg, bDMABUFAvail) {
			a.nic.dmabuf(msg[len(bDMABUFAvail):])
		}
	case 'c':
		if hasPrefix(msg, "comm ") {
			if i := bytes.Index(msg, bNRanks); i >= 0 {
				if n, ok := leadingInt(msg[i+len(bNRanks):]); ok && n > a.s.NRanks {
					a.s.NRanks = n
				}
			}
		}
	}
}

// net handles the "NET/..." messages, dispatched on the byte after "NET/".
func (a *Analyzer) net(msg []byte) {
	if len(msg) > 4 {
		switch msg[4] {
		case 'I':
			switch {
			case bytes.HasPrefix(msg, bIBUsing):
				a.ibUsing(msg[len(bIBUsing):])
				return
			case bytes.HasPrefix(msg, bIBNoDev):
				a.s.IBNoDevice = true
				return
			case hasPrefix(msg, "NET/IB: "):
				a.nic.qp(msg)
				return
			}
		case 'S':
			if bytes.HasPrefix(msg, bSockUsing) {
				a.socketUsing(msg[len(bSockUsing):])
				return
			}
		case 'P':
			if bytes.HasPrefix(msg, bPlugin) {
				a.addText(&a.s.PluginErrors, msg)
				return
			}
		}
	}
	// "NET/<name> : GPU Direct RDMA ..." (the plugin name may have spaces)
	if i := bytes.IndexByte(msg, ':'); i > 0 && bytes.HasPrefix(msg[i-1:], bGDR) {
		a.gdr(msg[i-1+len(bGDR):])
	}
}

// channel counts "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA".
func (a *Analyzer) channel(msg []byte) {
	var via []byte
	if hasPrefix(msg, "via ") {
		via = msg[len("via "):]
	} else {
		i := bytes.Index(msg, bViaBare) // "via " is rarer to start a match than " via "
		if i < 0 {
			return // a ring or tree order line: "Channel 00/02 :    0   1"
		}
		via = msg[i+len(bViaBare):]
	}
	gdr := bytes.Contains(via, bGDRDMA)
	if gdr {
		a.s.GDRDMAChannels++
	}
	if hasPrefix(via, "NET/IB/") { // the common case, as below
		a.chIB++
		a.nic.channel(via[len("NET/"):], gdr)
		return
	}
	slash := bytes.IndexByte(via, '/')
	if slash < 0 {
		if j := bytes.IndexAny(via, " \t"); j >= 0 {
			via = via[:j]
		}
		a.countOther(via)
		return
	}
	switch string(via[:slash]) {
	case "P2P":
		a.chP2P++
		return
	case "SHM":
		a.chSHM++
		return
	case "NET":
		name := via[slash+1:]
		if j := bytes.IndexByte(name, '/'); j >= 0 {
			name = name[:j]
		}
		switch string(name) {
		case "IB":
			a.chIB++
			a.nic.channel(via[slash+1:], gdr)
		case "Socket":
			a.chSocket++
		default:
			a.countOther(via[:slash+1+len(name)])
		}
		return
	}
	a.countOther(via[:slash])
}

func (a *Analyzer) countOther(key []byte) {
	if len(key) == 0 || len(key) > 64 {
		return
	}
	p := a.chOther[string(key)]
	if p == nil {
		if len(a.chOther) >= maxOtherChannels && !a.chunk {
			return
		}
		p = new(int)
		k := string(key)
		a.chOther[k] = p
		a.chOtherKeys = append(a.chOtherKeys, k)
	}
	*p++
}

// ibUsing parses " [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB/SHARP [RO]; OOB eth0:10.0.0.1<0>".
func (a *Analyzer) ibUsing(rest []byte) {
	// Every rank prints the same line: parse each distinct one once.
	if seenLine(a.seenIB, rest) {
		return
	}
	devs := rest
	if i := bytes.Index(rest, bOOB); i >= 0 {
		devs = rest[:i]
		oob := bytes.TrimSpace(rest[i+len(bOOB):])
		if name := ifaceName(oob); a.s.OOBInterface == "" && len(name) > 0 {
			// The interface and its address are one fact: set together.
			a.s.OOBInterface, a.s.OOBAddress = string(name), ""
			if j := bytes.IndexByte(oob, ':'); j >= 0 {
				addr := oob[j+1:]
				if k := bytes.LastIndexByte(addr, '<'); k >= 0 {
					addr = addr[:k]
				}
				a.s.OOBAddress = string(addr)
			}
		}
	}
	for len(devs) > 0 {
		devs = bytes.TrimLeft(devs, " \t;")
		if len(devs) == 0 {
			break
		}
		tok := devs
		if j := bytes.IndexAny(devs, " \t;"); j >= 0 {
			tok, devs = devs[:j], devs[j:]
		} else {
			devs = nil
		}
		if bytes.Equal(tok, []byte("[RO]")) {
			a.s.IBRelaxedOrdering = true
			continue
		}
		a.ibDevice(tok)
	}
}

// ibDevice parses "[0]erdma_0:1/RoCE".
func (a *Analyzer) ibDevice(tok []byte) {
	if len(tok) < 4 || tok[0] != '[' || len(a.s.IBDevices) >= maxListed {
		return
	}
	end := bytes.IndexByte(tok, ']')
	if end < 0 {
		return
	}
	idx, ok := leadingInt(tok[1:end])
	if !ok {
		return
	}
	rest := tok[end+1:]
	colon := bytes.LastIndexByte(rest, ':')
	if colon <= 0 {
		return
	}
	name := rest[:colon]
	portLink := rest[colon+1:]
	port, _ := leadingInt(portLink)
	for _, d := range a.s.IBDevices {
		if d.Name == string(name) && d.Port == port {
			return
		}
	}
	link := ""
	if j := bytes.IndexByte(portLink, '/'); j >= 0 {
		link = string(portLink[j+1:])
	}
	a.s.IBDevices = append(a.s.IBDevices, IBDevice{Index: idx, Name: string(name), Port: port, Link: link})
}

// addIBDevice appends d unless a device of the same name and port is listed
// (or the list is full), as ibDevice does.
func (a *Analyzer) addIBDevice(d IBDevice) {
	if len(a.s.IBDevices) >= maxListed {
		return
	}
	for _, have := range a.s.IBDevices {
		if have.Name == d.Name && have.Port == d.Port {
			return
		}
	}
	a.s.IBDevices = append(a.s.IBDevices, d)
}

// socketUsing parses " [0]eth0:10.106.68.39<0> [1]eth1:10.0.0.2<0>".
func (a *Analyzer) socketUsing(rest []byte) {
	if seenLine(a.seenSocket, rest) {
		return
	}
	for tok := range bytes.FieldsSeq(rest) {
		if len(tok) < 4 || tok[0] != '[' {
			continue
		}
		end := bytes.IndexByte(tok, ']')
		if end < 0 {
			continue
		}
		if name := ifaceName(tok[end+1:]); len(name) > 0 {
			a.addText(&a.s.SocketInterfaces, name)
		}
	}
}

// ifaceName returns "eth0" of "eth0:10.0.0.1<0>".
func ifaceName(s []byte) []byte {
	s = bytes.TrimSpace(s)
	if i := bytes.IndexByte(s, ':'); i >= 0 {
		return s[:i]
	}
	return s
}

func (a *Analyzer) network(name []byte) {
	name = bytes.TrimSpace(name)
	if len(name) == 0 || len(name) > 64 {
		return
	}
	if a.s.Network == "" {
		a.s.Network = string(name)
	}
	a.addText(&a.s.Networks, name)
}

// gdr parses "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'".
func (a *Analyzer) gdr(rest []byte) {
	q := bytes.IndexByte(rest, '\'')
	if q < 0 {
		return
	}
	name := rest[q+1:]
	if e := bytes.IndexByte(name, '\''); e >= 0 {
		name = name[:e]
	}
	if len(name) == 0 {
		return
	}
	switch {
	case bytes.HasPrefix(rest, []byte("Enabled")):
		a.addText(&a.s.GDR.Enabled, name)
	case bytes.HasPrefix(rest, []byte("Disabled")):
		a.addText(&a.s.GDR.Disabled, name)
	}
}

// env records "NCCL_IB_HCA set to mlx5_0" and "NCCL_SHM_DISABLE set by environment to 1.".
func (a *Analyzer) env(msg []byte) {
	// The key is the first word; the separator follows it directly.
	i := bytes.IndexByte(msg, ' ')
	if i <= 0 || i > 64 {
		return
	}
	key := msg[:i]
	// Every rank prints the same variables and the first value is kept: a
	// key seen decides the line (a short list of the keys seen is cheaper
	// to scan than hashing the key).
	for _, k := range a.envKeys {
		if k == string(key) {
			return
		}
	}
	if len(a.envKeys) >= maxListed {
		return
	}
	sep := bSetByEnv
	if !bytes.HasPrefix(msg[i:], sep) {
		if sep = bSetTo; !hasPrefix(msg[i:], " set to ") {
			return
		}
	}
	val := bytes.TrimSpace(msg[i+len(sep):])
	val = bytes.TrimSuffix(val, []byte("."))
	a.addEnv(string(key), string(clip(val)))
}

func (a *Analyzer) warning(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if bytes.Contains(msg, bCreateQP) {
		a.s.QPCreateFailures++
	}
	if bytes.Contains(msg, bIbv) && (bytes.Contains(msg, bENOMEM1) || bytes.Contains(msg, bENOMEM2)) {
		a.s.MemlockSuspect = true
	}
	if len(a.s.Warnings) < maxWarnings {
		a.addText(&a.s.Warnings, msg)
	}
}

// addText appends s to list unless already there (or the list is full).
func (a *Analyzer) addText(list *[]string, s []byte) {
	s = clip(s)
	if len(*list) >= maxListed {
		return
	}
	// Lists are short: a linear scan avoids building a key per line.
	for _, have := range *list {
		if have == string(s) {
			return
		}
	}
	*list = append(*list, string(s))
}

func clip(s []byte) []byte {
	if len(s) > maxTextLen {
		return s[:maxTextLen]
	}
	return s
}

// hasPrefix reports whether b begins with s. With a constant s of up to 8
// bytes it compiles to one comparison, where bytes.HasPrefix calls memequal.
func hasPrefix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[:len(s)]) == s
}

// leadingInt parses the decimal digits at the start of s.
func leadingInt(s []byte) (int, bool) {
	n, i := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 9 {
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, i > 0
}

// Summary returns what was seen so far. It may be called more than once.
func (a *Analyzer) Summary() *Summary {
	s := a.s
	s.IBDevices = append([]IBDevice{}, a.s.IBDevices...)
	s.SocketInterfaces = append([]string{}, a.s.SocketInterfaces...)
	s.GDR.Enabled = append([]string{}, a.s.GDR.Enabled...)
	s.GDR.Disabled = append([]string{}, a.s.GDR.Disabled...)
	s.Warnings = append([]string{}, a.s.Warnings...)
	s.Plugins = append([]string(nil), a.s.Plugins...)
	s.PluginErrors = append([]string(nil), a.s.PluginErrors...)
	s.Networks = nil
	if len(a.s.Networks) > 1 {
		s.Networks = append([]string(nil), a.s.Networks...)
	}
	if a.s.Env != nil {
		s.Env = make(map[string]string, len(a.s.Env))
		for k, v := range a.s.Env {
			s.Env[k] = v
		}
	}
	s.Channels = map[string]int{"NET/IB": a.chIB, "NET/Socket": a.chSocket, "P2P": a.chP2P, "SHM": a.chSHM}
	for k, v := range a.chOther {
		s.Channels[k] = *v
	}
	if s.Network == "" {
		switch {
		case a.chIB > 0:
			s.Network = "IB"
		case a.chSocket > 0:
			s.Network = "Socket"
		}
	}
	s.NICs = a.nic.uses(s.IBDevices)
	if s.NICs == nil {
		s.NICs = []NICUse{}
	}
	s.DMABUFGPUs = append([]int(nil), a.nic.dmabufGPUs...)
	s.Transport = s.netTransport()
	s.NICSpread = s.NICBalance()
	return &s
}

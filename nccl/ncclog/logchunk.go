package ncclog

import (
	"bytes"
	"context"
	"io"
	"sync"
)

// chunkSize is how much of the log one worker reads and analyses at a
// time: large enough that the per-chunk analyser and merge cost nothing
// measurable, small enough to stay in the CPU's cache between the read and
// the scan.
const chunkSize = 1 << 20

// analyzeChunks reads r in chunks of at most size bytes split at line ends,
// analyses them on workers goroutines and merges the analyses in input
// order. Each worker reads its own chunk (under a lock: the reader is
// sequential) and analyses it while the data is still in its CPU's cache;
// at most 2*workers chunks are read and not yet merged. With one worker it
// finds exactly what one analyser fed the lines in order finds, lines cut
// at size bytes alike.
func analyzeChunks(r io.Reader, size, workers int) (*Analyzer, error) {
	return analyzeSource(context.Background(), newChunkReader(r, size), size, workers)
}

// chunkSource hands out runs of whole lines; see chunkReader.next and
// fileChunks.next.
type chunkSource interface {
	// buffer is a worker's buffer for next, which may grow it.
	buffer() []byte
	// next claims the next chunk and returns its whole lines, then, where
	// a line was too long, that line's first chunk size bytes (cut), to be
	// fed as one line after them; ok is false at the end of the input.
	// It is called under the scan's lock, in chunk order, and calls
	// unlock once the chunk is claimed: what it does after that (a read
	// at its own offset) runs alongside the other workers.
	next(buf *[]byte, unlock func()) (lines, cut []byte, ok bool, err error)
}

// analyzeSource is analyzeChunks over any chunk source: a reader copied
// into each worker's buffer in turn, or a file each worker reads at its own
// offset (logfile.go). Once ctx is done no further chunk is taken and ctx's
// error is returned.
//
// The workers merge the analyses themselves, in input order, as each
// finishes a chunk: a goroutine that only merged would be handed every
// chunk's result through a channel, and on two CPUs those handoffs cost
// the workers several per cent of the run in thread wake-ups and idle time.
func analyzeSource(ctx context.Context, src chunkSource, size, workers int) (*Analyzer, error) {
	workers = max(workers, 1)
	var (
		mu      sync.Mutex
		room    = sync.NewCond(&mu) // broadcast when a chunk is merged or the scan fails
		taken   int                 // chunks claimed (their sequence numbers are 0..taken-1)
		merged  int                 // chunks merged into total, in order
		pending = make(map[int]*Analyzer, 2*workers)
		total   = NewAnalyzer()
		readErr error
		wg      sync.WaitGroup
	)
	// done records the analysis of chunk seq (nil: nothing to merge, at
	// the end of the input or where reading it failed with err) and merges
	// every chunk that is next in order. A failed chunk stops the scan: the
	// chunks after it are not merged.
	done := func(seq int, a *Analyzer, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && readErr == nil {
			readErr = err
		}
		pending[seq] = a
		for {
			next, ok := pending[merged]
			if !ok {
				break
			}
			delete(pending, merged)
			if next != nil && readErr == nil {
				total.merge(next)
			}
			merged++
		}
		room.Broadcast()
	}
	// take claims the next chunk and reads it. At most 2*workers chunks are
	// taken and not merged: a worker that runs ahead waits for the chunk
	// another is still on.
	take := func(buf *[]byte) (lines, cut []byte, seq int, ok bool) {
		mu.Lock()
		for readErr == nil && ctx.Err() == nil && taken-merged >= 2*workers {
			room.Wait()
		}
		if err := ctx.Err(); err != nil && readErr == nil {
			readErr = err
		}
		if readErr != nil {
			room.Broadcast()
			mu.Unlock()
			return nil, nil, 0, false
		}
		seq = taken
		taken++
		locked := true
		unlock := func() {
			if locked {
				locked = false
				mu.Unlock()
			}
		}
		lines, cut, ok, err := src.next(buf, unlock)
		unlock()
		if err != nil || !ok {
			done(seq, nil, err)
			return nil, nil, 0, false
		}
		return lines, cut, seq, true
	}
	for range workers {
		wg.Go(func() {
			buf := src.buffer()
			// A worker's chunks come in input order, so a NET/IB or
			// NET/Socket line it parsed in an earlier chunk is already in
			// the merge: its repeats (every rank prints one) are skipped.
			seenIB, seenSocket := map[string]struct{}{}, map[string]struct{}{}
			memo := new(lineMemo) // the same reasoning: logmemo.go
			for {
				lines, cut, seq, ok := take(&buf)
				if !ok {
					return
				}
				a := NewAnalyzer()
				a.chunk, a.seenIB, a.seenSocket, a.memo = true, seenIB, seenSocket, memo
				a.block(lines)
				if cut != nil {
					a.Feed(cut)
				}
				done(seq, a, nil)
			}
		})
	}
	wg.Wait()
	if readErr != nil {
		return nil, readErr
	}
	return total, nil
}

// chunkReader cuts a reader into runs of whole lines. It is not safe for
// concurrent use.
type chunkReader struct {
	r     io.Reader
	size  int    // bytes per chunk at most
	carry []byte // the start of a line whose end is not read yet
	skip  bool   // inside a line longer than a chunk: discard to its end
	done  bool
}

// newChunkReader cuts r into chunks of at most size bytes.
func newChunkReader(r io.Reader, size int) *chunkReader {
	return &chunkReader{r: r, size: size, carry: make([]byte, 0, size)}
}

func (c *chunkReader) buffer() []byte { return make([]byte, c.size) }

// next reads the next chunk into buf (under the scan's lock: the reader is
// sequential).
func (c *chunkReader) next(buf *[]byte, unlock func()) (lines, cut []byte, ok bool, err error) {
	defer unlock()
	data, long, err := c.read(*buf)
	switch {
	case err != nil || data == nil:
		return nil, nil, false, err
	case long:
		return nil, data, true, nil
	}
	return data, nil, true, nil
}

// read fills buf with whole lines (the last line of the input may lack its
// newline) and returns them, or a line longer than buf cut to buf's size
// (long; the rest of that line is skipped). It returns nil data at the end
// of the input or on a read error.
func (c *chunkReader) read(buf []byte) (data []byte, long bool, err error) {
	if c.done {
		return nil, false, nil
	}
	n := copy(buf, c.carry)
	c.carry = c.carry[:0]
	for {
		k, err := fill(c.r, buf[n:])
		n += k
		eof := err == io.EOF
		if err != nil && !eof {
			c.done = true
			return nil, false, err
		}
		data := buf[:n]
		if c.skip {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				n = 0
				if eof {
					c.done = true
					return nil, false, nil
				}
				continue
			}
			c.skip = false
			data = data[i+1:]
		}
		if eof {
			c.done = true
			if len(data) == 0 {
				return nil, false, nil
			}
			return data, false, nil
		}
		last := bytes.LastIndexByte(data, '\n')
		switch {
		case last >= 0:
			c.carry = append(c.carry, data[last+1:]...)
			return data[:last+1], false, nil
		case len(data) == len(buf):
			c.skip = true
			return data, true, nil
		default:
			n = copy(buf, data)
		}
	}
}

// merge adds b, the analysis of the lines that follow a's, to a: a then
// holds what one analyser fed both runs of lines in order would hold. Every
// field of Summary, and every counter of Analyzer, must join here: a
// field left out is lost for every chunk but the first
// (TestLogMergeCoversEveryField fails until it joins).
func (a *Analyzer) merge(b *Analyzer) {
	s, t := &a.s, &b.s
	firstSet(&s.NCCLVersion, t.NCCLVersion)
	firstSet(&s.Network, t.Network)
	for _, d := range t.IBDevices {
		a.addIBDevice(d)
	}
	a.addTexts(&s.SocketInterfaces, t.SocketInterfaces, maxListed)
	a.addTexts(&s.GDR.Enabled, t.GDR.Enabled, maxListed)
	a.addTexts(&s.GDR.Disabled, t.GDR.Disabled, maxListed)
	a.chIB += b.chIB
	a.chSocket += b.chSocket
	a.chP2P += b.chP2P
	a.chSHM += b.chSHM
	for _, k := range b.chOtherKeys {
		p := a.chOther[k]
		if p == nil {
			if len(a.chOther) >= maxOtherChannels && !a.chunk {
				continue
			}
			p = new(int)
			a.chOther[k] = p
			a.chOtherKeys = append(a.chOtherKeys, k)
		}
		*p += *b.chOther[k]
	}
	s.GDRDMAChannels += t.GDRDMAChannels
	a.addTexts(&s.Warnings, t.Warnings, maxWarnings)
	a.addTexts(&s.Networks, t.Networks, maxListed)
	s.IBNoDevice = s.IBNoDevice || t.IBNoDevice
	s.IBRelaxedOrdering = s.IBRelaxedOrdering || t.IBRelaxedOrdering
	if s.OOBInterface == "" { // the pair is set together, never the address alone
		s.OOBInterface, s.OOBAddress = t.OOBInterface, t.OOBAddress
	}
	firstSet(&s.BootstrapInterface, t.BootstrapInterface)
	a.addTexts(&s.Plugins, t.Plugins, maxListed)
	a.addTexts(&s.PluginErrors, t.PluginErrors, maxListed)
	for _, k := range b.envKeys {
		a.addEnv(k, t.Env[k])
	}
	s.NRanks = max(s.NRanks, t.NRanks)
	s.QPCreateFailures += t.QPCreateFailures
	s.MemlockSuspect = s.MemlockSuspect || t.MemlockSuspect
	s.NCCLLines += t.NCCLLines
	a.nic.merge(&b.nic)
	// Transport, NICs and NICSpread are derived in Summary.
}

// firstSet keeps the first non-empty value.
func firstSet(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// addTexts adds each of more to list as addText would, up to limit entries.
func (a *Analyzer) addTexts(list *[]string, more []string, limit int) {
	for _, v := range more {
		if len(*list) >= limit {
			return
		}
		if !containsString(*list, v) {
			*list = append(*list, v)
		}
	}
}

func containsString(list []string, v string) bool {
	for _, have := range list {
		if have == v {
			return true
		}
	}
	return false
}

// addEnv records key's value unless key was seen (the first value is kept)
// or the list is full.
func (a *Analyzer) addEnv(key, val string) {
	if containsString(a.envKeys, key) || len(a.envKeys) >= maxListed {
		return
	}
	if a.s.Env == nil {
		a.s.Env = map[string]string{}
	}
	a.envKeys = append(a.envKeys, key)
	a.s.Env[key] = val
}

// fill reads until p is full or r fails (io.EOF at the end): a pipe or a
// reader that returns 64 KiB at a time still makes whole chunks.
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k, err := read(r, p[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

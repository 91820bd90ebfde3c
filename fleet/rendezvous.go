package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

// helloMsg is what a member says first.
type helloMsg struct {
	Rank     int    `json:"rank"`
	Size     int    `json:"size"`
	Host     string `json:"host"`
	Version  string `json:"version,omitempty"` // erdmakit version, for mixed-fleet warnings
	Launcher string `json:"launcher,omitempty"`
	// Auth is the HMAC of rank, size and host under the job secret
	// (JobSecret); rank 0 refuses a hello without the right one.
	Auth string `json:"auth,omitempty"`
}

// Bounds on the rendezvous before a member is admitted: what an
// unauthenticated peer can cost rank 0.
const (
	// maxHelloPayload bounds a hello (a rank, a size, a host name).
	maxHelloPayload = 4 << 10
	// helloTimeout is how long a connection may take to say hello.
	helloTimeout = 10 * time.Second
	// maxPending bounds connections that have not said hello yet; one more
	// closes the oldest of them (a rank's hello follows its connect at
	// once, so silent connections cannot crowd it out).
	maxPending = 64
	// maxErrors bounds Gathering.Errors (the rest are counted).
	maxErrors = 32
)

// welcomeMsg is rank 0's answer to a Hello.
type welcomeMsg struct {
	Size int `json:"size"`
}

// member is a rank that joined, as rank 0 sees it.
type member struct {
	helloMsg
	Conn *peerConn
}

// gathering is the outcome of waiting for the members at rank 0.
type gathering struct {
	Members map[int]*member // by rank, rank 0 excluded
	Missing []int           // ranks that did not join in time
	Errors  []string        // connections refused (garbage, wrong size, duplicate rank, bad auth), at most 32 listed
	Refused int             // connections refused in all
}

func (g *gathering) refuse(msg string) {
	g.Refused++
	if len(g.Errors) < maxErrors {
		g.Errors = append(g.Errors, msg)
	} else if len(g.Errors) == maxErrors {
		g.Errors = append(g.Errors, "(further refusals only counted)")
	}
}

// Close closes every member connection.
func (g *gathering) Close() error {
	for _, m := range g.Members {
		_ = m.Conn.Close()
	}
	return nil
}

// gather accepts members on l until all size-1 other ranks have said hello or
// the wait ends; a connection that speaks garbage, claims a taken rank (the
// first keeps it) or lacks key's authentication is refused with an error
// message and does not stop the others. Before its hello a connection is
// bounded: MaxHelloPayload bytes, HelloTimeout, MaxPending at once.
// msgTimeout bounds each message on the accepted connections. key is the
// job secret (JobSecret); nil takes every hello at its word.
func gather(ctx context.Context, l net.Listener, size int, wait, msgTimeout time.Duration, key []byte) (*gathering, error) {
	if size < 1 {
		return nil, fmt.Errorf("fleet: job size %d", size)
	}
	g := &gathering{Members: make(map[int]*member)}
	if size == 1 {
		return g, nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()

	var mu sync.Mutex
	var wg sync.WaitGroup
	pending := map[net.Conn]uint64{} // not yet said hello -> accept order; under mu
	var seq uint64
	helloWait := min(helloTimeout, msgTimeout)
	for {
		c, err := l.Accept()
		if err != nil {
			break // the wait ended (listener closed) or the listener failed
		}
		mu.Lock()
		if len(pending) >= maxPending {
			var oldest net.Conn
			for pc, n := range pending {
				if oldest == nil || n < pending[oldest] {
					oldest = pc
				}
			}
			delete(pending, oldest)
			_ = oldest.Close() // its goroutine refuses it
		}
		seq++
		pending[c] = seq
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := newPeerConn(c, msgTimeout)
			var h helloMsg
			err := conn.recv(ctx, msgHello, &h, helloWait, maxHelloPayload)
			mu.Lock()
			delete(pending, c)
			defer mu.Unlock()
			if err == nil {
				err = admit(g, h, size, key)
			}
			if err != nil {
				g.refuse(fmt.Sprintf("%s: %v", c.RemoteAddr(), err))
				_ = conn.Send(ctx, msgError, errorMsg{Error: err.Error()})
				_ = conn.Close()
				return
			}
			if err := conn.Send(ctx, msgWelcome, welcomeMsg{Size: size}); err != nil {
				g.refuse(fmt.Sprintf("rank %d (%s): %v", h.Rank, h.Host, err))
				_ = conn.Close()
				return
			}
			g.Members[h.Rank] = &member{helloMsg: h, Conn: conn}
			if len(g.Members) == size-1 {
				_ = l.Close() // everyone is here: stop accepting
			}
		}()
	}
	wg.Wait()
	for r := 1; r < size; r++ {
		if _, ok := g.Members[r]; !ok {
			g.Missing = append(g.Missing, r)
		}
	}
	sort.Strings(g.Errors)
	return g, nil
}

func admit(g *gathering, h helloMsg, size int, key []byte) error {
	switch {
	case !authentic(key, h):
		return fmt.Errorf("rank %d (%s): %w", h.Rank, h.Host, ErrNotInJob)
	case h.Size != size:
		return fmt.Errorf("rank %d says the job has %d ranks, rank 0 says %d", h.Rank, h.Size, size)
	case h.Rank <= 0 || h.Rank >= size:
		return fmt.Errorf("rank %d is outside 1..%d", h.Rank, size-1)
	case g.Members[h.Rank] != nil:
		return fmt.Errorf("rank %d joined twice (from %s and again)", h.Rank, g.Members[h.Rank].Host)
	}
	return nil
}

// ErrNotInJob: a hello without the job secret's authentication.
var ErrNotInJob = errors.New("hello not authenticated with the job secret (not a rank of this job, or ranks launched with different " + SecretEnv + ")")

// join connects a member to rank 0 at addr, retrying while rank 0 is not yet
// listening, until wait ends; it returns the welcomed connection. key is the
// job secret (JobSecret) that authenticates h.
func join(ctx context.Context, addr string, h helloMsg, wait, msgTimeout time.Duration, key []byte) (*peerConn, error) {
	if key != nil {
		h.Auth = helloMAC(key, h)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	backoff := 50 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn := newPeerConn(c, msgTimeout)
			if err := conn.Send(ctx, msgHello, h); err != nil {
				_ = conn.Close()
				return nil, err
			}
			var w welcomeMsg
			if err := conn.Recv(ctx, msgWelcome, &w, 0); err != nil {
				_ = conn.Close()
				return nil, err
			}
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("fleet: rank %d could not reach rank 0 at %s within %v: %w", h.Rank, addr, wait, errors.Join(err, ctx.Err()))
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

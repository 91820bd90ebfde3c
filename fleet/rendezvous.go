package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"
)

// helloMsg is what a member says first.
type helloMsg struct {
	Rank     int    `json:"rank"`
	Size     int    `json:"size"`
	Host     string `json:"host"`
	Version  string `json:"version,omitempty"` // erdmakit version, for mixed-fleet warnings
	Launcher string `json:"launcher,omitempty"`
	// Nonce is the member's half of the session key (auth.go): nonceLen
	// random bytes, hex. The hello frame itself is tagged with that key.
	Nonce string `json:"nonce"`
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
	// listener is rank 0's rendezvous socket when gatherJob opened it:
	// it lives as long as the gathering.
	listener net.Listener
}

func (g *gathering) refuse(msg string) {
	g.Refused++
	if len(g.Errors) < maxErrors {
		g.Errors = append(g.Errors, msg)
	} else if len(g.Errors) == maxErrors {
		g.Errors = append(g.Errors, "(further refusals only counted)")
	}
}

// Close closes every member connection, and the rendezvous socket when
// gatherJob opened it.
func (g *gathering) Close() error {
	for _, m := range g.Members {
		_ = m.Conn.Close()
	}
	if g.listener != nil {
		_ = g.listener.Close()
	}
	return nil
}

// joinJob is the side of every rank but 0 in a launcher job (fleet doctor,
// bw mesh, fleet prove): say hello to rank 0 at addr, as opt says.
func joinJob(ctx context.Context, me Rank, addr string, opt Options) (*peerConn, error) {
	return join(ctx, addr, helloMsg{Rank: me.Rank, Size: me.Size, Host: opt.Hostname, Version: opt.Version, Launcher: me.Launcher},
		opt.Join, opt.Message, opt.Secret)
}

// gatherJob is rank 0's side: listen on addr's port and gather the job's
// other ranks. Closing the gathering closes the socket too.
func gatherJob(ctx context.Context, me Rank, addr string, opt Options) (*gathering, error) {
	l, err := listen(addr)
	if err != nil {
		return nil, err
	}
	g, err := gather(ctx, l, me.Size, opt.Join, opt.Message, opt.Secret)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	g.listener = l
	return g, nil
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
			h, err := greet(ctx, conn, key, helloWait)
			mu.Lock()
			delete(pending, c)
			defer mu.Unlock()
			if err == nil {
				err = admit(g, h, size)
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

// greet is rank 0's side of a session's start: it sends a fresh challenge,
// reads the hello (at most maxHelloPayload bytes, within wait), derives the
// session key from key, the challenge and the hello's nonce, and checks the
// hello's tag with it. A hello made for another challenge (a replay) or
// under another key is ErrNotInJob.
func greet(ctx context.Context, conn *peerConn, key []byte, wait time.Duration) (helloMsg, error) {
	var h helloMsg
	challenge, err := newNonce()
	if err != nil {
		return h, err
	}
	if err := conn.Send(ctx, msgChallenge, challengeMsg{Challenge: challenge}); err != nil {
		return h, err
	}
	conn.recvMu.Lock()
	defer conn.recvMu.Unlock()
	f, err := conn.readRaw(ctx, wait, maxHelloPayload)
	if err != nil {
		return h, fmt.Errorf("fleet: waiting for hello from %s: %w", conn.RemoteAddr(), err)
	}
	if f.Type != msgHello {
		return h, fmt.Errorf("fleet: expected hello from %s, got %s", conn.RemoteAddr(), f.Type)
	}
	if len(f.Payload) < tagLen {
		return h, fmt.Errorf("untagged hello: %w", ErrNotInJob)
	}
	if err := json.Unmarshal(f.Payload[:len(f.Payload)-tagLen], &h); err != nil {
		return h, fmt.Errorf("fleet: decoding hello from %s: %w", conn.RemoteAddr(), err)
	}
	sk, err := sessionKey(key, challenge, h.Nonce)
	if err != nil {
		return h, err
	}
	conn.setSession(sk, fromRank0)
	if err := conn.verify(&f); err != nil {
		return h, fmt.Errorf("rank %d (%s): %w", h.Rank, h.Host, ErrNotInJob)
	}
	return h, nil
}

func admit(g *gathering, h helloMsg, size int) error {
	switch {
	case h.Size != size:
		return fmt.Errorf("rank %d says the job has %d ranks, rank 0 says %d", h.Rank, h.Size, size)
	case h.Rank <= 0 || h.Rank >= size:
		return fmt.Errorf("rank %d is outside 1..%d", h.Rank, size-1)
	case g.Members[h.Rank] != nil:
		return fmt.Errorf("rank %d joined twice (from %s and again)", h.Rank, g.Members[h.Rank].Host)
	}
	return nil
}

// ErrNotInJob: a hello not authenticated with this session's key.
var ErrNotInJob = errors.New("hello not authenticated with the job secret (not a rank of this job, a replayed hello, or ranks launched with different " + SecretEnv + ")")

// join connects a member to rank 0 at addr, retrying while rank 0 is not yet
// listening, until wait ends; it returns the welcomed connection, its session
// authenticated with key, the job secret (JobSecret).
func join(ctx context.Context, addr string, h helloMsg, wait, msgTimeout time.Duration, key []byte) (*peerConn, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	backoff := 50 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn := newPeerConn(c, msgTimeout)
			err = hello(ctx, conn, h, min(helloTimeout, msgTimeout), key)
			if err == nil {
				return conn, nil
			}
			_ = conn.Close()
			if !closedEarly(err) || ctx.Err() != nil {
				return nil, err
			}
			// Rank 0 closed the connection before its welcome: with more
			// than maxPending connections waiting (hundreds of ranks
			// starting at once) it sheds the oldest. Connect again.
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

// hello is a member's side of a session's start: read rank 0's challenge
// (within wait), answer with h and a nonce of its own under the session key,
// read the welcome.
func hello(ctx context.Context, conn *peerConn, h helloMsg, wait time.Duration, key []byte) error {
	var ch challengeMsg
	if err := conn.recv(ctx, msgChallenge, &ch, wait, maxHelloPayload); err != nil {
		return fmt.Errorf("%w (rank 0 opens with a challenge since protocol %d: is it an older erdmakit?)", err, wireVersion)
	}
	nonce, err := newNonce()
	if err != nil {
		return err
	}
	h.Nonce = nonce
	sk, err := sessionKey(key, ch.Challenge, nonce)
	if err != nil {
		return err
	}
	conn.setSession(sk, fromMember)
	conn.lenientErrors = true
	if err := conn.Send(ctx, msgHello, h); err != nil {
		return err
	}
	var w welcomeMsg
	if err := conn.Recv(ctx, msgWelcome, &w, 0); err != nil {
		return err
	}
	conn.lenientErrors = false
	return nil
}

// closedEarly says whether a hello failed because rank 0 closed the
// connection (it sheds waiting connections beyond maxPending), not because
// it refused the rank.
func closedEarly(err error) bool {
	var pe *PeerError
	if errors.As(err, &pe) || errors.Is(err, ErrNotAuthentic) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

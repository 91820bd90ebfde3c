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

// Hello is what a member says first.
type Hello struct {
	Rank     int    `json:"rank"`
	Size     int    `json:"size"`
	Host     string `json:"host"`
	Version  string `json:"version,omitempty"` // erdmakit version, for mixed-fleet warnings
	Launcher string `json:"launcher,omitempty"`
}

// Welcome is rank 0's answer to a Hello.
type Welcome struct {
	Size int `json:"size"`
}

// Member is a rank that joined, as rank 0 sees it.
type Member struct {
	Hello
	Conn *Conn
}

// Gathering is the outcome of waiting for the members at rank 0.
type Gathering struct {
	Members map[int]*Member // by rank, rank 0 excluded
	Missing []int           // ranks that did not join in time
	Errors  []string        // connections refused (garbage, wrong size, duplicate rank)
}

// Close closes every member connection.
func (g *Gathering) Close() error {
	for _, m := range g.Members {
		_ = m.Conn.Close()
	}
	return nil
}

// Gather accepts members on l until all size-1 other ranks have said hello or
// the wait ends; a connection that speaks garbage or claims a taken rank is
// refused with an error message and does not stop the others. msgTimeout
// bounds each message on the accepted connections.
func Gather(ctx context.Context, l net.Listener, size int, wait, msgTimeout time.Duration) (*Gathering, error) {
	if size < 1 {
		return nil, fmt.Errorf("fleet: job size %d", size)
	}
	g := &Gathering{Members: make(map[int]*Member)}
	if size == 1 {
		return g, nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()

	var mu sync.Mutex
	var wg sync.WaitGroup
	for {
		c, err := l.Accept()
		if err != nil {
			break // the wait ended (listener closed) or the listener failed
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := NewConn(c, msgTimeout)
			var h Hello
			err := conn.Recv(ctx, MsgHello, &h, 0)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				err = admit(g, h, size)
			}
			if err != nil {
				g.Errors = append(g.Errors, fmt.Sprintf("%s: %v", c.RemoteAddr(), err))
				_ = conn.Send(ctx, MsgError, ErrorMsg{Error: err.Error()})
				_ = conn.Close()
				return
			}
			if err := conn.Send(ctx, MsgWelcome, Welcome{Size: size}); err != nil {
				g.Errors = append(g.Errors, fmt.Sprintf("rank %d (%s): %v", h.Rank, h.Host, err))
				_ = conn.Close()
				return
			}
			g.Members[h.Rank] = &Member{Hello: h, Conn: conn}
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

func admit(g *Gathering, h Hello, size int) error {
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

// Join connects a member to rank 0 at addr, retrying while rank 0 is not yet
// listening, until wait ends; it returns the welcomed connection.
func Join(ctx context.Context, addr string, h Hello, wait, msgTimeout time.Duration) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	backoff := 50 * time.Millisecond
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn := NewConn(c, msgTimeout)
			if err := conn.Send(ctx, MsgHello, h); err != nil {
				_ = conn.Close()
				return nil, err
			}
			var w Welcome
			if err := conn.Recv(ctx, MsgWelcome, &w, 0); err != nil {
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

package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/health"
)

// Worker runs this host's side of a mesh pair test (the CLI implements it
// with the perf package's bandwidth engine).
type Worker interface {
	// Serve serves bandwidth tests on port until ctx is cancelled, calling
	// ready once it listens; it returns the first test that failed, if any.
	Serve(ctx context.Context, port int, ready func()) error
	// Client runs one test against host:port, device i to device i, and
	// returns what it measured.
	Client(ctx context.Context, host string, port int) PairResult
}

// Task is what rank 0 asks a member to do.
type Task struct {
	ID   int    `json:"id"`
	Kind string `json:"kind"` // "serve", "client", or "stop" (ends serve task ID)
	Host string `json:"host,omitempty"`
	Port int    `json:"port"`
}

// TaskResult is a member's answer to a Task. A serve task answers twice:
// Ready once listening, then Done.
type TaskResult struct {
	ID     int         `json:"id"`
	Ready  bool        `json:"ready,omitempty"`
	Done   bool        `json:"done,omitempty"`
	Result *PairResult `json:"result,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// recvAny reads the next frame of any type, authenticated.
func (c *peerConn) recvAny(ctx context.Context, timeout time.Duration) (wireFrame, error) {
	return c.next(ctx, timeout, maxPayload)
}

// work is a member's loop in a mesh: it runs the tasks rank 0 sends until
// rank 0 says bye, goes away, or stays silent longer than idle. A serve task
// runs in the background until rank 0 stops it, so the loop keeps reading.
func work(ctx context.Context, conn *peerConn, w Worker, idle time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	serving := map[int]context.CancelFunc{}
	var mu sync.Mutex // serializes sends from the serve goroutines and the loop
	send := func(r TaskResult) error {
		mu.Lock()
		defer mu.Unlock()
		return conn.Send(ctx, msgResult, r)
	}
	for {
		f, err := conn.recvAny(ctx, idle)
		if err != nil {
			return fmt.Errorf("fleet: waiting for a task from rank 0: %w", err)
		}
		switch f.Type {
		case msgBye:
			return nil
		case msgTask:
		default:
			return fmt.Errorf("fleet: rank 0 sent %s, expected a task", f.Type)
		}
		var t Task
		if err := json.Unmarshal(f.Payload, &t); err != nil {
			return fmt.Errorf("fleet: undecodable task: %w", err)
		}
		switch t.Kind {
		case "serve":
			sctx, stop := context.WithCancel(ctx)
			serving[t.ID] = stop
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := w.Serve(sctx, t.Port, func() { _ = send(TaskResult{ID: t.ID, Ready: true}) })
				res := TaskResult{ID: t.ID, Done: true}
				if err != nil {
					res.Error = err.Error()
				}
				_ = send(res)
			}()
		case "stop":
			if stop, ok := serving[t.ID]; ok {
				stop()
				delete(serving, t.ID)
			}
		case "client":
			r := w.Client(ctx, t.Host, t.Port)
			if err := send(TaskResult{ID: t.ID, Done: true, Result: &r}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("fleet: unknown task kind %q", t.Kind)
		}
	}
}

// netTester runs pair tests over the rendezvous connections; rank 0 takes
// part through its own Worker.
type netTester struct {
	self    Worker
	selfIP  string // how members reach rank 0
	members map[int]*member
	ips     map[int]string
	port    int
	nextID  chan int
}

// isSelf says whether mesh position pos is rank 0 itself (no member
// connection).
func (nt *netTester) isSelf(pos int) bool {
	_, ok := nt.members[pos]
	return !ok
}

func (nt *netTester) id() int {
	id := <-nt.nextID
	nt.nextID <- id + 1
	return id
}

// await reads results from m until one for id that satisfies want.
func await(ctx context.Context, m *member, id int, want func(TaskResult) bool) (TaskResult, error) {
	for {
		var r TaskResult
		if err := m.Conn.Recv(ctx, msgResult, &r, 0); err != nil {
			return TaskResult{}, err
		}
		if r.ID == id && want(r) {
			return r, nil
		}
	}
}

func (nt *netTester) TestPair(ctx context.Context, p Pair) PairResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serverIP := nt.selfIP
	// Each server index has its own port, so that ranks sharing one host
	// (a test on one machine, several ranks per node) do not collide.
	port := nt.port + p.Server
	served := make(chan error, 1)
	ready := make(chan struct{})
	var stopServer func()
	if nt.isSelf(p.Server) {
		sctx, stop := context.WithCancel(ctx)
		stopServer = stop
		go func() { served <- nt.self.Serve(sctx, port, func() { close(ready) }) }()
	} else {
		m := nt.members[p.Server]
		serverIP = nt.ips[p.Server]
		id := nt.id()
		if err := m.Conn.Send(ctx, msgTask, Task{ID: id, Kind: "serve", Port: port}); err != nil {
			return PairResult{Error: "server: " + err.Error()}
		}
		r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Ready || r.Done })
		if err != nil {
			return PairResult{Error: "server " + m.Host + ": " + err.Error()}
		}
		if !r.Ready {
			return PairResult{Error: "server " + m.Host + ": " + r.Error}
		}
		close(ready)
		stopServer = func() { _ = m.Conn.Send(ctx, msgTask, Task{ID: id, Kind: "stop"}) }
		go func() {
			r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Done })
			if err == nil && r.Error != "" {
				err = errors.New(r.Error)
			}
			served <- err
		}()
	}
	select {
	case <-ready:
	case err := <-served:
		return PairResult{Error: fmt.Sprintf("server: %v", err)}
	case <-ctx.Done():
		return PairResult{Error: "server did not get ready: " + ctx.Err().Error()}
	}
	var res PairResult
	if nt.isSelf(p.Client) {
		res = nt.self.Client(ctx, serverIP, port)
	} else {
		m := nt.members[p.Client]
		id := nt.id()
		if err := m.Conn.Send(ctx, msgTask, Task{ID: id, Kind: "client", Host: serverIP, Port: port}); err != nil {
			return PairResult{Error: "client: " + err.Error()}
		}
		r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Done })
		switch {
		case err != nil:
			return PairResult{Error: "client " + m.Host + ": " + err.Error()}
		case r.Result == nil:
			return PairResult{Error: "client " + m.Host + ": no result"}
		}
		res = *r.Result
	}
	stopServer()
	if err := <-served; err != nil && res.Error == "" {
		res.Error = "server: " + err.Error()
	}
	return res
}

// RunMeshJob runs `bw mesh` as one rank of a launcher job: rank 0 gathers the
// others, schedules the mesh and returns the report; other ranks serve tasks
// and return nil. port is the bandwidth test's TCP port.
func RunMeshJob(ctx context.Context, me Rank, addr string, w Worker, port int, opt Options, mopt MeshOptions) (*MeshReport, error) {
	opt = opt.withDefaults()
	if me.Rank != 0 {
		conn, err := joinJob(ctx, me, addr, opt)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		// Between tasks a member may wait for a whole mesh of other pairs.
		return nil, work(ctx, conn, w, 24*time.Hour)
	}
	g, err := gatherJob(ctx, me, addr, opt)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	host, _, _ := net.SplitHostPort(addr)
	nt := &netTester{self: w, selfIP: host, members: map[int]*member{}, ips: map[int]string{}, port: port, nextID: make(chan int, 1)}
	nt.nextID <- 1
	// Ranks that joined, renumbered densely for the mesh; rank 0 first.
	ranks := []int{0}
	for r := range g.Members {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	hosts := make([]string, len(ranks))
	hosts[0] = opt.Hostname
	for i, r := range ranks[1:] {
		m := g.Members[r]
		nt.members[i+1] = m
		nt.ips[i+1] = remoteIP(m.Conn)
		hosts[i+1] = m.Host
	}
	uniqueNames(hosts, ranks)
	rep := RunMesh(ctx, hosts, nt, mopt)
	// Culprits name mesh positions; report launcher ranks.
	for _, list := range [][]Culprit{rep.BadHosts, rep.BadLinks, rep.DeadHosts} {
		for i := range list {
			for j, idx := range list[i].Ranks {
				list[i].Ranks[j] = ranks[idx]
			}
		}
	}
	rep.Ranks = ranks
	rep.Authenticated = opt.Authenticated
	for _, m := range g.Members {
		_ = m.Conn.Send(ctx, msgBye, struct{}{})
	}
	if ctx.Err() != nil {
		// Interrupted: ranks that had not joined were not reached, not dead.
		rep.Interrupted, rep.NotReached = true, g.Missing
		g.Missing = nil
	}
	for _, r := range g.Missing {
		rep.DeadHosts = append(rep.DeadHosts, Culprit{
			Hosts: []string{fmt.Sprintf("rank %d", r)}, Ranks: []int{r},
			Reason: "never joined the mesh", Evidence: []string{fmt.Sprintf("no hello within %v", opt.Join)},
		})
		rep.Status = health.Worst(rep.Status, health.Fail)
	}
	if len(g.Errors) > 0 {
		rep.Errors = append(rep.Errors, g.Errors...)
	}
	return rep, nil
}

func remoteIP(c *peerConn) string {
	a := c.RemoteAddr().String()
	h, _, err := net.SplitHostPort(a)
	if err != nil {
		return strings.TrimSpace(a)
	}
	return h
}

// uniqueNames suffixes host names that occur more than once (several ranks
// on one host) with their rank: "gpu1#3".
func uniqueNames(hosts []string, ranks []int) {
	count := map[string]int{}
	for _, h := range hosts {
		count[h]++
	}
	for i, h := range hosts {
		if count[h] > 1 || h == "" {
			hosts[i] = fmt.Sprintf("%s#%d", h, ranks[i])
		}
	}
}

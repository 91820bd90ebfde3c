package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// TimeoutMS bounds a client task: rank 0 stops waiting for its result
	// then, so the member ends the test too (0: no bound).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
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
// A member serves one test at a time: a new serve task first ends any
// earlier one (whose stop was lost to a timed-out test) and waits until its
// port is free, so a port in use is never left behind by rank 0's timeouts.
func work(ctx context.Context, conn *peerConn, w Worker, idle time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	m := &memberTasks{w: w, conn: conn, ctx: ctx, serving: map[int]serveTask{}}
	defer m.wg.Wait()
	defer cancel() // before the wait: it ends the serve tasks still running
	for {
		f, err := conn.recvAny(ctx, idle)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("fleet: mesh member interrupted while waiting for rank 0's next task: %w", context.Cause(ctx))
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("fleet: rank 0 closed the mesh session before saying it was done (interrupted, or it ended): %w", err)
			}
			return fmt.Errorf("fleet: waiting for a task from rank 0 (silent for %v): %w", idle, err)
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
		if err := m.run(t); err != nil {
			return err
		}
	}
}

// serveTask is a serve task running on a member.
type serveTask struct {
	stop context.CancelFunc
	done chan struct{} // closed when its Serve has returned: the port is free
}

// memberTasks runs a member's tasks.
type memberTasks struct {
	w       Worker
	conn    *peerConn
	ctx     context.Context
	wg      sync.WaitGroup
	mu      sync.Mutex // serializes sends from the serve goroutines and the loop
	serving map[int]serveTask
}

func (m *memberTasks) send(r TaskResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conn.Send(m.ctx, msgResult, r)
}

// run runs one task: a serve task in the background, a client task to its
// end (bounded by the task's timeout).
func (m *memberTasks) run(t Task) error {
	switch t.Kind {
	case "serve":
		m.serve(t)
	case "stop":
		// Stopped, it stays listed until it has ended: the next serve
		// task waits for its port.
		if s, ok := m.serving[t.ID]; ok {
			s.stop()
		}
	case "client":
		cctx, cancel := m.ctx, context.CancelFunc(func() {})
		if t.TimeoutMS > 0 {
			// The test ends when rank 0 stops waiting for it.
			cctx, cancel = context.WithTimeout(m.ctx, time.Duration(t.TimeoutMS)*time.Millisecond)
		}
		r := m.w.Client(cctx, t.Host, t.Port)
		cancel()
		return m.send(TaskResult{ID: t.ID, Done: true, Result: &r})
	default:
		return fmt.Errorf("fleet: unknown task kind %q", t.Kind)
	}
	return nil
}

// serve starts a serve task once every earlier one has ended (whose stop
// was lost to a timed-out test): its port is then free.
func (m *memberTasks) serve(t Task) {
	for id, s := range m.serving {
		s.stop()
		<-s.done
		delete(m.serving, id)
	}
	sctx, stop := context.WithCancel(m.ctx)
	s := serveTask{stop: stop, done: make(chan struct{})}
	m.serving[t.ID] = s
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := m.w.Serve(sctx, t.Port, func() { _ = m.send(TaskResult{ID: t.ID, Ready: true}) })
		close(s.done)
		res := TaskResult{ID: t.ID, Done: true}
		if err != nil {
			res.Error = err.Error()
		}
		_ = m.send(res)
	}()
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

// TestPair implements PairTester over the members' connections. Whatever
// ends the test (a result, an error, ctx's deadline), the server is stopped
// before it returns, so a timed-out test never leaves its server holding its
// port. An error is laid on the end it is known to come from (Fault): the
// server's port in use or its silence is the server's, never its partner's.
func (nt *netTester) TestPair(ctx context.Context, p Pair) PairResult {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each server index has its own port, so that ranks sharing one host
	// (a test on one machine, several ranks per node) do not collide.
	port := nt.port + p.Server
	srv, fail := nt.startServer(ctx, p.Server, port)
	if fail != nil {
		return *fail
	}
	res := nt.runClient(ctx, p.Client, srv.ip, port)
	if err := srv.stop(ctx); err != nil && res.Error == "" {
		res.Error, res.Fault = "server: "+err.Error(), FaultServer
	}
	return res
}

// pairServer is the serving end of one pair test.
type pairServer struct {
	ip string
	// stop ends the serve task and returns its error, when it is known
	// before ctx ends; it releases the server whatever ctx's state.
	stop func(ctx context.Context) error
}

// stopGrace bounds what stopping a server may take once its test is over
// (a stop message to a member, the end of rank 0's own server).
const stopGrace = 5 * time.Second

// startServer starts mesh position pos serving on port and waits until it
// listens. On failure it returns the pair's result, laid on the server.
func (nt *netTester) startServer(ctx context.Context, pos, port int) (pairServer, *PairResult) {
	serverFail := func(format string, a ...any) *PairResult {
		return &PairResult{Error: fmt.Sprintf(format, a...), Fault: FaultServer}
	}
	served := make(chan error, 1)
	ready := make(chan struct{})
	if nt.isSelf(pos) {
		sctx, end := context.WithCancel(context.WithoutCancel(ctx))
		go func() { served <- nt.self.Serve(sctx, port, func() { close(ready) }) }()
		stop := func(context.Context) error {
			end()
			select { // the port is free once Serve returns
			case err := <-served:
				return err
			case <-time.After(stopGrace):
				return fmt.Errorf("still serving %v after it was stopped", stopGrace)
			}
		}
		select {
		case <-ready:
			return pairServer{ip: nt.selfIP, stop: stop}, nil
		case err := <-served:
			end()
			return pairServer{}, serverFail("server: %v", err)
		case <-ctx.Done():
			_ = stop(ctx)
			return pairServer{}, serverFail("server did not get ready: %v", ctx.Err())
		}
	}
	m := nt.members[pos]
	id := nt.id()
	stop := func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
		defer cancel()
		_ = m.Conn.Send(sctx, msgTask, Task{ID: id, Kind: "stop"})
		if ctx.Err() != nil {
			return nil // the test is over; the member frees the port itself
		}
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
			return nil
		}
	}
	if err := m.Conn.Send(ctx, msgTask, Task{ID: id, Kind: "serve", Port: port}); err != nil {
		return pairServer{}, serverFail("server %s: %v", m.Host, err)
	}
	r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Ready || r.Done })
	switch {
	case err != nil:
		_ = stop(ctx)
		return pairServer{}, serverFail("server %s did not get ready: %v", m.Host, err)
	case !r.Ready:
		return pairServer{}, serverFail("server %s: %s", m.Host, r.Error)
	}
	close(ready)
	go func() {
		r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Done })
		if err == nil && r.Error != "" {
			err = errors.New(r.Error)
		}
		served <- err
	}()
	return pairServer{ip: nt.ips[pos], stop: stop}, nil
}

// runClient runs the client end of a pair test at mesh position pos.
func (nt *netTester) runClient(ctx context.Context, pos int, serverIP string, port int) PairResult {
	if nt.isSelf(pos) {
		return nt.self.Client(ctx, serverIP, port)
	}
	m := nt.members[pos]
	id := nt.id()
	t := Task{ID: id, Kind: "client", Host: serverIP, Port: port}
	if dl, ok := ctx.Deadline(); ok {
		t.TimeoutMS = max(1, time.Until(dl).Milliseconds())
	}
	if err := m.Conn.Send(ctx, msgTask, t); err != nil {
		return PairResult{Error: "client " + m.Host + ": " + err.Error(), Fault: FaultClient}
	}
	r, err := await(ctx, m, id, func(r TaskResult) bool { return r.Done })
	var ne net.Error
	switch {
	case err != nil && ctx.Err() == nil && !(errors.As(err, &ne) && ne.Timeout()):
		// Not a timeout: the member's connection broke (its process ended).
		return PairResult{Error: "client " + m.Host + ": " + err.Error(), Fault: FaultClient}
	case err != nil:
		// No answer in time: the client hung, or the server it writes to.
		return PairResult{Error: "client " + m.Host + ": no result: " + err.Error()}
	case r.Result == nil:
		return PairResult{Error: "client " + m.Host + ": no result", Fault: FaultClient}
	}
	return *r.Result
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
	rep := runMesh(ctx, hosts, ranks, nt, mopt)
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
		c := newCulprit(CulpritHost, health.Fail, StageMesh, "never joined the mesh").on([]string{fmt.Sprintf("rank %d", r)}, []int{r})
		c.Evidence = []string{fmt.Sprintf("no hello within %v", opt.Join)}
		rep.DeadHosts = append(rep.DeadHosts, *c)
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

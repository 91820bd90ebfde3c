package fleet

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpWorker is a Worker over real loopback TCP: the server accepts one
// connection and reads the client's rank; the "bandwidth" is the slower of
// the two ranks' modelled rates.
type tcpWorker struct {
	rank int
	rate func(rank int) float64
}

func (w tcpWorker) Serve(ctx context.Context, port int, ready func()) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer l.Close()
	ready()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped by rank 0
			}
			return err
		}
		_, err = fmt.Fprintf(c, "%d\n", w.rank)
		c.Close()
		if err != nil {
			return err
		}
	}
}

func (w tcpWorker) Client(ctx context.Context, host string, port int) PairResult {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return PairResult{Error: err.Error()}
	}
	defer c.Close()
	var server int
	if _, err := fmt.Fscan(c, &server); err != nil {
		return PairResult{Error: err.Error()}
	}
	return PairResult{Gbps: min(w.rate(server), w.rate(w.rank))}
}

func TestMeshJobOverLoopback(t *testing.T) {
	addr := freeAddr(t)
	base := 20000 + int(time.Now().UnixNano()%5000)
	const size = 6
	rate := func(r int) float64 {
		if r == 4 {
			return 40
		}
		return 100
	}
	opt := Options{Join: 5 * time.Second, Message: 5 * time.Second}
	var wg sync.WaitGroup
	for r := 1; r < size; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := opt
			o.Hostname = fmt.Sprintf("gpu%d", r)
			me, _ := NewRank(r, size, "test")
			rep, err := RunMeshJob(context.Background(), me, addr, tcpWorker{rank: r, rate: rate}, base, o, MeshOptions{})
			assert.NoError(t, err)
			assert.Nil(t, rep)
		}()
	}
	me, _ := NewRank(0, size, "test")
	o := opt
	o.Hostname = "gpu0"
	rep, err := RunMeshJob(context.Background(), me, addr, tcpWorker{rank: 0, rate: rate}, base, o, MeshOptions{PairTimeout: 5 * time.Second})
	require.NoError(t, err)
	wg.Wait()
	assert.Equal(t, size-1, rep.Rounds)
	assert.Len(t, rep.Results, size*(size-1)/2)
	for _, r := range rep.Results {
		assert.Empty(t, r.Error)
	}
	require.Len(t, rep.BadHosts, 1, "%+v", rep)
	assert.Equal(t, []string{"gpu4"}, rep.BadHosts[0].Hosts)
	assert.Equal(t, []int{4}, rep.BadHosts[0].Ranks)
}

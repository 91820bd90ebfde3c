package ncclog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// sequential is the reference: one analyser fed line by line.
func sequential(t *testing.T, in []byte) *Summary {
	t.Helper()
	a := NewAnalyzer()
	require.NoError(t, eachLineBytes(bytes.NewReader(in), readBuf, func(l []byte) { a.Feed(l) }))
	return a.Summary()
}

// genLog builds a log of n lines from NCCL's messages with random prefixes,
// values and noise, sized to overflow every bound (256 devices, 64
// warnings, 32 other channel transports, 256 env variables).
func genLog(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	prefixes := []string{"", "gpu-1:123:456 [0] ", "[1,0]<stdout>:h:1:2 [3] ", "(RayWorkerWrapper pid=9) h:1:1 [0] ", "[7] "}
	msgs := []func() string{
		func() string {
			return fmt.Sprintf("NCCL INFO NCCL version 2.%d.%d+cuda12.4", rng.IntN(30), rng.IntN(9))
		},
		func() string {
			return fmt.Sprintf("NCCL INFO Using network %s", []string{"IB", "Socket", "AWS Libfabric"}[rng.IntN(3)])
		},
		func() string {
			return fmt.Sprintf("NCCL INFO NET/IB : Using [0]erdma_%d:1/RoCE [1]mlx5_%d:%d/IB [RO]; OOB eth%d:10.0.0.%d<0>", rng.IntN(300), rng.IntN(4), rng.IntN(3), rng.IntN(3), rng.IntN(255))
		},
		func() string { return "NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE ; OOB " },
		func() string { return "NCCL INFO NET/IB : No device found." },
		func() string { return fmt.Sprintf("NCCL INFO NET/Socket : Using [0]eth%d:10.0.0.1<0>", rng.IntN(300)) },
		func() string {
			return fmt.Sprintf("NCCL INFO NET/IB : GPU Direct RDMA %s for HCA %d 'erdma_%d'", []string{"Enabled", "Disabled"}[rng.IntN(2)], rng.IntN(8), rng.IntN(300))
		},
		func() string {
			return fmt.Sprintf("NCCL INFO Channel %02d/0 : 0[0] -> 1[1] [send] via %s", rng.IntN(32),
				[]string{"NET/IB/0/GDRDMA", "NET/IB/1", "NET/Socket/0", "P2P/IPC", "SHM/direct/direct", fmt.Sprintf("NET/Plug%d/0", rng.IntN(40)), fmt.Sprintf("CollNet%d", rng.IntN(40))}[rng.IntN(7)])
		},
		func() string { return "NCCL INFO Channel 00/02 :    0   1" },
		func() string {
			return fmt.Sprintf("NCCL WARN Call to ibv_create_qp failed with error Unknown error -12 (%d)", rng.IntN(100))
		},
		func() string { return fmt.Sprintf("NCCL WARN NET/IB : something %d", rng.IntN(100)) },
		func() string {
			return fmt.Sprintf("NCCL INFO NCCL_VAR_%d set by environment to %d.", rng.IntN(300), rng.IntN(9))
		},
		func() string { return fmt.Sprintf("NCCL INFO NCCL_IB_HCA set to erdma_%d", rng.IntN(4)) },
		func() string { return fmt.Sprintf("NCCL INFO Bootstrap : Using eth%d:10.0.0.1<0>", rng.IntN(3)) },
		func() string { return fmt.Sprintf("NCCL INFO Initialized NET plugin P%d", rng.IntN(300)) },
		func() string { return fmt.Sprintf("NCCL INFO NET/Plugin : Plugin load returned %d", rng.IntN(300)) },
		func() string { return fmt.Sprintf("NCCL INFO plugin/net.cc:%d -> 2", rng.IntN(300)) },
		func() string { return fmt.Sprintf("NCCL INFO comm 0x1 rank 0 nranks %d cudaDev 0", rng.IntN(64)) },
		func() string { return "NCCL INFO Assigned NET plugin IB to comm" },
		func() string { return "NET/IB : Using [0]erdma_1:1/RoCE" },
		func() string {
			return fmt.Sprintf("NCCL INFO NET/IB: NCCL Dev %d IbDev %d Port 1 qpn %d mtu 4096 GID %d (80FE/%X) fifoRkey=0x1 fifoLkey=0x2", rng.IntN(4), rng.IntN(4), rng.IntN(999), rng.IntN(4), rng.IntN(12))
		},
		func() string { return fmt.Sprintf("NCCL INFO DMA-BUF is available on GPU device %d", rng.IntN(8)) },
		func() string {
			return "     4194304       1048576     float     sum      -1    80.10   52.36   98.18      0"
		},
		func() string { return "noise without the letter" },
	}
	var b bytes.Buffer
	for range n {
		b.WriteString(prefixes[rng.IntN(len(prefixes))])
		b.WriteString(msgs[rng.IntN(len(msgs))]())
		if rng.IntN(10) == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// splitAt analyses in[:k] and in[k:] alone and merges them.
func splitAt(in []byte, k int) *Summary {
	a, b := NewAnalyzer(), NewAnalyzer()
	b.chunk = true
	a.block(in[:k])
	b.block(in[k:])
	a.merge(b)
	return a.Summary()
}

// Chunked analysis equals sequential analysis wherever the chunk boundary
// falls: on every sample and on generated logs, split at every line end.
func TestLogMergeAtEveryLineBoundary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(t, err)
	inputs := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs[filepath.Base(f)] = b
	}
	for seed := range uint64(4) {
		inputs[fmt.Sprintf("generated %d", seed)] = genLog(seed, 1500)
	}
	for name, in := range inputs {
		want := sequential(t, in)
		for k := 0; k <= len(in); k++ {
			if k > 0 && in[k-1] != '\n' {
				continue
			}
			require.Equal(t, want, splitAt(in, k), "%s split at byte %d", name, k)
		}
	}
}

// The parallel reader finds what the sequential one finds, with any chunk
// size (lines cut at the chunk size the same way) and any number of workers.
func TestAnalyzeChunksParallelEqualsSequential(t *testing.T) {
	in := genLog(42, 20000)
	for _, f := range []string{"C05_nccl_info_GDRDMA_receive_send_multi_nic_aks.txt", "erdma-nccl_warn_ibv_create_qp_enomem_memlock_64k_erdma_pod.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(t, err)
		in = append(in, b...)
	}
	for _, size := range []int{61, 4096, 65536, chunkSize} {
		ref := NewAnalyzer()
		require.NoError(t, eachLineBytes(bytes.NewReader(in), size, func(l []byte) { ref.Feed(l) }))
		want := ref.Summary()
		for _, workers := range []int{1, 2, 3, 8} {
			a, err := analyzeChunks(bytes.NewReader(in), size, workers)
			require.NoError(t, err)
			require.Equal(t, want, a.Summary(), "chunk %d, %d workers", size, workers)
		}
	}
}

// Every field of Summary must join merge. The generated log and the
// samples set every field; merging their analysis into an empty one (as
// the second chunk of a log whose first chunk has nothing) must keep them
// all. A new field fails here until a line in the test input sets it and
// merge carries it.
func TestLogMergeCoversEveryField(t *testing.T) {
	in := genLog(7, 5000)
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		in = append(in, b...)
	}
	full := NewAnalyzer()
	full.block(in)
	s := reflect.ValueOf(*full.Summary())
	for i := range s.NumField() {
		if s.Type().Field(i).Name == "HostPeerMem" {
			continue // the caller's fact, never the log's
		}
		require.False(t, s.Field(i).IsZero(), "Summary.%s is not set by the test input: add a line that sets it (genLog)", s.Type().Field(i).Name)
	}
	merged := NewAnalyzer()
	merged.merge(full)
	require.Equal(t, full.Summary(), merged.Summary(), "a field is missing from Analyzer.merge")
}

// The memo remembers idempotent messages only, compares them whole, and
// leaves out what it cannot hold.
func TestLineMemo(t *testing.T) {
	var m lineMemo
	env := []byte("NCCL_IB_HCA set to erdma_0")
	require.False(t, m.seen(env))
	m.add(env)
	require.True(t, m.seen(env))
	require.False(t, m.seen([]byte("NCCL_IB_HCA set to erdma_1")), "same length and ends, one byte differs")
	long := bytes.Repeat([]byte("x"), memoMaxLen+1)
	m.add(long)
	require.False(t, m.seen(long), "too long to remember")
	m.add([]byte("short"))
	require.False(t, m.seen([]byte("short")), "too short to hash")
	require.False(t, idempotent([]byte("Channel 00/0 : 0[0] -> 1[1] via NET/IB/0")), "channel lines are counted")
	require.False(t, idempotent([]byte("via NET/IB/0/GDRDMA")))
	require.True(t, idempotent(env))
}

// FuzzAnalyzeChunks: any input, cut into chunks of 16 to 271 bytes and
// analysed by two workers (each keeping its memo and seen NET lines across
// its chunks), gives what feeding it line by line gives.
func FuzzAnalyzeChunks(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "[BCe]*.txt"))
	require.NoError(f, err)
	for i, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(append(b, b...), uint8(i*37))
	}
	f.Add([]byte(trickyLines+"\n"+trickyLines), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, n uint8) {
		size := 16 + int(n)
		ref := NewAnalyzer()
		require.NoError(t, eachLineBytes(bytes.NewReader(in), size, func(l []byte) { ref.Feed(l) }))
		a, err := analyzeChunks(bytes.NewReader(in), size, 2)
		require.NoError(t, err)
		require.Equal(t, ref.Summary(), a.Summary())
	})
}

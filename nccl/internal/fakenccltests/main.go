// Command fakenccltests stands in for an nccl-tests binary (all_reduce_perf)
// in erdmakit's tests: launched by a real mpirun or srun, it replays a
// recorded nccl-tests log per rank. Rank 0 prints the sample's header and
// table, one row at a time; every other rank prints NCCL INFO lines. Each
// rank echoes the NCCL_* and FAKE_* variables it received, so that tests can
// check what the launcher propagated.
//
// Environment:
//
//	FAKE_NCCL_SAMPLE     path of the log rank 0 replays (required)
//	FAKE_NCCL_ROW_DELAY  pause before each table row (Go duration, default 0)
//	FAKE_NCCL_FAIL_RANK  this rank prints a "Test NCCL failure" and exits
//	                     (the others wait, as in a collective, until killed),
//	                     once rank 0 has printed the sample's header, as a real
//	                     rank fails in a collective after init ...
//	FAKE_NCCL_FAIL_CODE  ... with this code (default 3)
//	FAKE_NCCL_HANG       "1": every rank hangs after its first lines;
//	                     "ignore-term": the same, ignoring SIGTERM/SIGINT/SIGHUP
//
// The rank comes from OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	rank := 0
	for _, k := range []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"} {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
			rank = v
			break
		}
	}
	host, _ := os.Hostname()
	pid := os.Getpid()
	out := bufio.NewWriter(os.Stdout)
	flush := func() { _ = out.Flush() }
	defer flush()

	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "NCCL_") || strings.HasPrefix(kv, "FAKE_") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		fmt.Fprintf(out, "fakenccltests: rank %d env %s\n", rank, kv)
	}
	fmt.Fprintf(out, "%s:%d:%d [0] NCCL INFO Bootstrap : Using eth0:10.0.0.%d<0>\n", host, pid, pid, rank+1)
	fmt.Fprintf(out, "%s:%d:%d [0] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE [RO]; OOB eth0:10.0.0.%d<0>\n", host, pid, pid, rank+1)
	fmt.Fprintf(out, "%s:%d:%d [0] NCCL INFO Using network IB\n", host, pid, pid)
	if rank == 0 {
		fmt.Fprintln(out, "NCCL version 2.21.5+cuda12.4")
	}
	fmt.Fprintf(out, "%s:%d:%d [0] NCCL INFO Channel 00/0 : %d[0] -> %d[0] [send] via NET/IB/0/GDRDMA\n", host, pid, pid+1, rank, rank+1)
	flush()

	if h := os.Getenv("FAKE_NCCL_HANG"); h == "1" || h == "ignore-term" {
		if h == "ignore-term" {
			signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		}
		fmt.Fprintf(out, "fakenccltests: rank %d hanging\n", rank)
		flush()
		for {
			time.Sleep(time.Hour)
		}
	}
	if v := os.Getenv("FAKE_NCCL_FAIL_RANK"); v != "" && v == strconv.Itoa(rank) {
		code := 3
		if c, err := strconv.Atoi(os.Getenv("FAKE_NCCL_FAIL_CODE")); err == nil {
			code = c
		}
		if rank != 0 {
			awaitHeader()
		}
		fmt.Fprintf(out, "%s: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'\n", host)
		fmt.Fprintf(out, " .. %s pid %d: Test failure common.cu:1110\n", host, pid)
		flush()
		return code
	}
	if rank != 0 {
		// Let rank 0 fail first when asked, as real ranks wait in collectives.
		if os.Getenv("FAKE_NCCL_FAIL_RANK") != "" {
			time.Sleep(30 * time.Second)
		}
		return 0
	}

	path := os.Getenv("FAKE_NCCL_SAMPLE")
	if path == "" {
		fmt.Fprintln(os.Stderr, "fakenccltests: FAKE_NCCL_SAMPLE is not set")
		return 2
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakenccltests:", err)
		return 2
	}
	defer f.Close()
	delay, _ := time.ParseDuration(os.Getenv("FAKE_NCCL_ROW_DELAY"))
	headerDone := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# source:") {
			continue
		}
		isRow := !strings.HasPrefix(strings.TrimSpace(line), "#") && len(strings.Fields(line)) >= 8
		if isRow && delay > 0 {
			flush()
			time.Sleep(delay)
		}
		if isRow && !headerDone {
			flush()
			headerPrinted()
			headerDone = true
		}
		fmt.Fprintln(out, line)
		if isRow {
			flush()
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "fakenccltests:", err)
		return 2
	}
	if os.Getenv("FAKE_NCCL_FAIL_RANK") != "" {
		// Another rank fails: a real rank 0 would wait in its next
		// collective until mpirun aborts it, never exit 0 beside a failed
		// peer (which makes mpirun skip the block naming that peer).
		flush()
		time.Sleep(30 * time.Second)
	}
	return 0
}

// headerMark is the file rank 0 creates once its header is out: the ranks
// of one launch on one host share their parent (mpirun's daemon, or
// slurmstepd), so its PID names the launch.
func headerMark() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("fakenccltests-header-%d", os.Getppid()))
}

func headerPrinted() {
	if os.Getenv("FAKE_NCCL_FAIL_RANK") != "" {
		_ = os.WriteFile(headerMark(), nil, 0o600)
	}
}

// awaitHeader waits (10 s at most) until rank 0 has printed the header, so
// that the failure's report can name the rank's host from it whatever the
// scheduling.
func awaitHeader() {
	mark := headerMark()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			_ = os.Remove(mark)
			return
		}
	}
}

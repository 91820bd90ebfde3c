package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExporterEndsWithinASecondOfASignal: issue 27 item 3, the exporter's
// part, on the built binary. Holding 300 connections that sent part of
// their headers, the exporter took 3.7 s (SIGTERM) and 4.25 s (SIGINT) to
// end: Shutdown waited for them up to its 5 s. Now everything that is not a
// scrape in progress is closed at once; the README promises a second.
func TestExporterEndsWithinASecondOfASignal(t *testing.T) {
	bin := buildCLI(t)
	root, err := filepath.Abs(hostDir("ebmgn8is-healthy"))
	require.NoError(t, err)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd, addr, waited := startExporter(t, ctx, bin, root)
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i := 0; i < 300; i++ {
				c, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				conns = append(conns, c)
				_, err = c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "))
				require.NoError(t, err)
			}
			require.NoError(t, tryScrapeCLI(addr), "a scrape under the slow connections")
			start := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err := <-waited:
				took := time.Since(start)
				t.Logf("%v with 300 slow-header connections: ended in %v", sig, took)
				assert.NoError(t, err, "exit status")
				assert.Less(t, took, time.Second)
			case <-time.After(10 * time.Second):
				t.Fatalf("the exporter did not end within 10 s of %v", sig)
			}
		})
	}
}

// startExporter starts the built exporter on root at a free loopback port
// and returns it, the address it says it serves, and its exit (cmd.Wait),
// sent once it has ended.
func startExporter(t *testing.T, ctx context.Context, bin, root string, args ...string) (*exec.Cmd, string, <-chan error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"exporter", "--listen", "127.0.0.1:0", "--root", root}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	addrs := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving http://([^/]+)/metrics`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1]
			}
		}
		waited <- cmd.Wait()
	}()
	select {
	case addr := <-addrs:
		return cmd, addr, waited
	case <-time.After(30 * time.Second):
		t.Fatal("the exporter did not say where it serves")
	}
	return nil, "", nil
}

// tryScrapeCLI makes one scrape with a bounded wait.
func tryScrapeCLI(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "HTTP/1.1 200 OK\r\n" {
		return &scrapeStatusError{line}
	}
	return nil
}

type scrapeStatusError struct{ line string }

func (e *scrapeStatusError) Error() string { return "scrape answered " + e.line }

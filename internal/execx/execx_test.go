package execx

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOutput(t *testing.T) {
	out, err := Output(context.Background(), "echo", "a b")
	require.NoError(t, err)
	assert.Equal(t, "a b\n", string(out), "argv, not a shell: one argument stays one")

	_, err = Output(context.Background(), "sh", "-c", "echo broken >&2; exit 3")
	var re *RunError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, re.Error(), "broken")
	assert.Contains(t, re.Error(), "exit status 3")

	_, err = Output(context.Background(), "/nonexistent/erdmakit-tool")
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestCancelEndsTheWholeProcessGroup starts a shell that starts a sleeping
// grandchild; cancelling must end both.
func TestCancelEndsTheWholeProcessGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := t.TempDir() + "/pid"
	cmd := Command(ctx, "sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	require.NoError(t, cmd.Start())
	var child int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		child, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	start := time.Now()
	cancel()
	_ = cmd.Wait()
	assert.Less(t, time.Since(start), Grace+2*time.Second)
	require.Eventually(t, func() bool {
		err := syscall.Kill(child, 0)
		return errors.Is(err, syscall.ESRCH)
	}, Grace+2*time.Second, 50*time.Millisecond, "the grandchild %d outlived the cancel", child)
}

package ctxio

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReaderPassesDataThrough(t *testing.T) {
	src := strings.Repeat("0123456789", 100000)
	got, err := io.ReadAll(NewReader(context.Background(), strings.NewReader(src)))
	require.NoError(t, err)
	assert.Equal(t, src, string(got))
}

// TestReaderReturnsOnCancelWhileBlocked: a read from a pipe nobody writes
// returns when the context ends.
func TestReaderReturnsOnCancelWhileBlocked(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	_, err = pw.Write([]byte("first line\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := NewReader(ctx, pr)
	b := make([]byte, 100)
	n, err := r.Read(b)
	require.NoError(t, err)
	assert.Equal(t, "first line\n", string(b[:n]))
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = io.Copy(&bytes.Buffer{}, r)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second)
	_, err = r.Read(b)
	assert.ErrorIs(t, err, context.Canceled, "stays failed")
}

func ExampleNewReader() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	b, _ := io.ReadAll(NewReader(ctx, strings.NewReader("ok\n")))
	os.Stdout.Write(b)
	// Output: ok
}

// TestReaderNeverBlockingInputs: a regular file, bytes and strings are read
// directly (no goroutine, no copy) and still stop once the context ends.
func TestReaderNeverBlockingInputs(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	require.NoError(t, err)
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	for _, r := range []io.Reader{f, strings.NewReader("x"), bytes.NewReader([]byte("x")), bytes.NewBufferString("x")} {
		w := NewReader(ctx, r)
		assert.IsType(t, checkReader{}, w, "%T", r)
	}
	assert.Same(t, f, NewReader(context.Background(), f).(*os.File), "an endless context changes nothing")
	cancel()
	_, err = NewReader(ctx, strings.NewReader("x")).Read(make([]byte, 1))
	assert.ErrorIs(t, err, context.Canceled)
}

// TestDoReturnsOnCancelWhileFnBlocks: a call stuck where nothing can
// interrupt it (a wedged driver's sysfs read) is abandoned when ctx ends;
// its late result is dropped.
func TestDoReturnsOnCancelWhileFnBlocks(t *testing.T) {
	release := make(chan struct{})
	finished := make(chan struct{})
	defer func() { close(release); <-finished }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	v, err := Do(ctx, func() (int, error) {
		defer close(finished)
		<-release
		return 42, nil
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, v)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestDoPassesResultsThrough(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := Do(ctx, func() (string, error) { return "x", io.EOF })
	assert.Equal(t, "x", v)
	assert.ErrorIs(t, err, io.EOF)
	v, err = Do(context.Background(), func() (string, error) { return "y", nil })
	assert.Equal(t, "y", v)
	assert.NoError(t, err)
	cancel()
	called := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	_, err = Do(ctx, func() (string, error) { close(called); <-release; return "", nil })
	assert.ErrorIs(t, err, context.Canceled)
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("fn was not called: it could not release what it was handed")
	}
}

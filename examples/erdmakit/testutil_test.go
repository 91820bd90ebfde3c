package main

import (
	"bytes"
	"errors"
	"sync"
)

// bytesBuffer is a bytes.Buffer safe for a process's concurrent writes.
type bytesBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *bytesBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *bytesBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

package perf

import (
	"context"
	"errors"
	"io"
	"sync"
)

// OpenVerbsLinks opens every device in names (DefaultDevices of o.Root when
// names is empty) with the same options: what `bw` tests. It returns the
// links and one io.Closer that closes them all (idempotent); when a device
// fails to open, those already open are closed and the error names it.
func OpenVerbsLinks(ctx context.Context, names []string, o VerbsOptions) ([]Link, io.Closer, error) {
	if len(names) == 0 {
		var err error
		if names, err = DefaultDevices(ctx, o.Root); err != nil {
			return nil, nil, err
		}
	}
	all := &closeAll{}
	var links []Link
	for _, n := range names {
		l, err := OpenVerbsLink(n, o)
		if err != nil {
			_ = all.Close()
			return nil, nil, err
		}
		all.cs = append(all.cs, l)
		links = append(links, l)
	}
	return links, all, nil
}

// closeAll closes its closers once, returning their errors joined.
type closeAll struct {
	once sync.Once
	cs   []io.Closer
	err  error
}

func (c *closeAll) Close() error {
	c.once.Do(func() {
		var errs []error
		for _, x := range c.cs {
			errs = append(errs, x.Close())
		}
		c.err = errors.Join(errs...)
	})
	return c.err
}

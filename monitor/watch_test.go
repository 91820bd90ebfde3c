package monitor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replay is a Sampler over recorded samples; past the end it fails.
type replay struct{ samples []*Sample }

func (r *replay) Sample(ctx context.Context) (*Sample, error) {
	if len(r.samples) == 0 {
		return nil, errors.New("device disappeared")
	}
	s := r.samples[0]
	r.samples = r.samples[1:]
	return s, nil
}

func TestWatchReportsEachInterval(t *testing.T) {
	r := &replay{samples: []*Sample{
		sample(0, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 0})),
		sample(time.Second, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 125e6})),
		sample(2*time.Second, port("erdma_0", "ACTIVE", map[string]uint64{"hw_tx_bytes_cnt": 375e6})),
	}}
	var got []float64
	err := Watch(context.Background(), r, time.Millisecond, 2, func(iv Interval) error {
		got = append(got, Gbps(iv.Ports[0].TxBytesPerS))
		return nil
	})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, 2}, got, 1e-9)
}

func TestWatchFailedSampleIsAnError(t *testing.T) {
	r := &replay{samples: []*Sample{sample(0)}}
	err := Watch(context.Background(), r, time.Millisecond, 0, func(Interval) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "device disappeared")
}

func TestWatchStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &replay{samples: []*Sample{sample(0)}}
	assert.NoError(t, Watch(ctx, r, time.Hour, 0, func(Interval) error { return nil }))
}

func TestWatchRejectsBadInterval(t *testing.T) {
	assert.Error(t, Watch(context.Background(), &replay{}, 0, 0, nil))
}

// TestWatchRefusesNegativeCount: issue 12 item 6; a negative count used to
// mean "forever" (`stat -l -c -5` never ended).
func TestWatchRefusesNegativeCount(t *testing.T) {
	r := &replay{samples: []*Sample{sample(0), sample(time.Second)}}
	err := Watch(context.Background(), r, time.Millisecond, -5, func(Interval) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "count")
}

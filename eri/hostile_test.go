package eri_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostile serves h and counts the requests and the bytes it managed to send.
type hostile struct {
	srv      *httptest.Server
	requests atomic.Int64
	sent     atomic.Int64
}

func newHostile(t *testing.T, h func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64)) *hostile {
	t.Helper()
	hs := &hostile{}
	hs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.requests.Add(1)
		h(w, r, &hs.sent)
	}))
	t.Cleanup(hs.srv.Close)
	return hs
}

func hostileClient(t *testing.T, url string, timeout time.Duration) *eri.Client {
	t.Helper()
	c, err := eri.New(eri.Config{Region: testRegion, Endpoint: url, Credential: staticCred(t, testAK, testSecret),
		RetryBase: time.Millisecond, Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// endless writes a JSON start and then filler until the client goes away.
func endless(delay time.Duration) func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64) {
	return func(w http.ResponseWriter, r *http.Request, sent *atomic.Int64) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"RequestId":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		if delay > 0 {
			chunk = chunk[:16]
		}
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if delay > 0 {
				time.Sleep(delay)
			}
		}
	}
}

// TestEndlessBodyIsCapped: an endpoint streaming an endless body cost
// gigabytes and tens of seconds (the SDK read the whole body, timing each
// phase separately). Now the answer is cut at MaxResponse, the call ends at
// once, and the error says what happened (issue 27 item 2).
func TestEndlessBodyIsCapped(t *testing.T) {
	hs := newHostile(t, endless(0))
	c := hostileClient(t, hs.srv.URL, 5*time.Second)
	start := time.Now()
	_, err := c.Describe(context.Background(), target)
	took := time.Since(start)
	require.ErrorIs(t, err, eri.ErrUnavailable)
	assert.Contains(t, err.Error(), "larger than 4 MiB")
	assert.Contains(t, err.Error(), "DescribeInstanceTypes")
	assert.Less(t, took, 3*time.Second)
	assert.Less(t, hs.sent.Load(), int64(32<<20), "the client stopped reading near the cap")
	assert.EqualValues(t, 1, hs.requests.Load(), "an oversized answer is not asked again")
}

// TestSlowEndlessBodyEndsAtTheDeadline: a body that trickles forever ends
// at the one deadline of the call, not a per-read timeout.
func TestSlowEndlessBodyEndsAtTheDeadline(t *testing.T) {
	hs := newHostile(t, endless(10*time.Millisecond))
	c := hostileClient(t, hs.srv.URL, 700*time.Millisecond)
	start := time.Now()
	_, err := c.Describe(context.Background(), target)
	took := time.Since(start)
	require.ErrorIs(t, err, eri.ErrUnavailable)
	assert.Contains(t, err.Error(), "HTTP 200, but the body did not end")
	assert.Less(t, took, 2*time.Second)
	assert.EqualValues(t, 1, hs.requests.Load())
}

// TestCancelEndsTheCall: cancelling the context (SIGINT/SIGTERM in the CLI)
// ends a call in the middle of its body at once.
func TestCancelEndsTheCall(t *testing.T) {
	hs := newHostile(t, endless(10*time.Millisecond))
	c := hostileClient(t, hs.srv.URL, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Describe(ctx, target)
	took := time.Since(start)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, took, time.Second)
}

// TestUnusableAnswersAreNamed: an HTML 502 page, garbage and JSON of the
// wrong types were reported as the decoder's words (`invalid character '<'
// looking for beginning of value`, a 400-character type path) and exited 2:
// now each names the HTTP status and the endpoint, briefly, and wraps
// ErrUnavailable (the CLI's exit 3) (issue 27 item 7).
func TestUnusableAnswersAreNamed(t *testing.T) {
	for name, tc := range map[string]struct {
		status   int
		ctype    string
		body     string
		want     []string
		attempts int64
	}{
		"html 502": {502, "text/html", "<html><head><title>502 Bad Gateway</title></head><body><center>502 Bad Gateway</center><hr><center>nginx</center></body></html>",
			[]string{"HTTP 502 Bad Gateway from 127.0.0.1:", "(text/html, not the API's JSON)"}, 3},
		"html 403 of a proxy": {403, "text/html", "<html><body>Access denied by proxy</body></html>",
			[]string{"HTTP 403 Forbidden from 127.0.0.1:", "(text/html, not the API's JSON)"}, 1},
		"garbage": {200, "application/json", "\x00\x01garbage",
			[]string{"is not the API's JSON"}, 1},
		"wrong types": {200, "application/json", `{"RequestId":"R","InstanceTypes":{"InstanceType":"oops"}}`,
			[]string{"not in the documented shape: field Body.InstanceTypes.InstanceType: a list expected, a string found"}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			hs := newHostile(t, func(w http.ResponseWriter, r *http.Request, _ *atomic.Int64) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			c := hostileClient(t, hs.srv.URL, 5*time.Second)
			_, err := c.Describe(context.Background(), target)
			require.ErrorIs(t, err, eri.ErrUnavailable)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotErrorIs(t, err, eri.ErrForbidden, "not the API's answer: nothing about RAM")
			assert.NotContains(t, err.Error(), "<html")
			assert.NotContains(t, err.Error(), "invalid character")
			assert.Less(t, len(err.Error()), 400, "brief: %s", err)
			assert.Equal(t, tc.attempts, hs.requests.Load(), "a 5xx is retried (bounded), the rest not")
		})
	}
}

// TestServiceUnavailableOnceIsRetried: a 503 answer is transient.
func TestServiceUnavailableOnceIsRetried(t *testing.T) {
	f, url := newFake(t)
	f.Fail("DescribeNetworkInterfaces", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503, Times: 1})
	c := newClient(t, url)
	v, err := c.Describe(context.Background(), target)
	require.NoError(t, err)
	assert.Len(t, v.ENIs, 1)

	f.Fail("DescribeNetworkInterfaces", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503})
	_, err = c.Describe(context.Background(), target)
	require.ErrorIs(t, err, eri.ErrUnavailable)
	assert.Contains(t, err.Error(), "after 3 attempts")
	var ae *eri.APIError
	require.True(t, errors.As(err, &ae))
	assert.Equal(t, 503, ae.HTTPStatus)
}

package eri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"time"
)

// MaxResponse bounds the body of one API answer. The largest legitimate
// one, a DescribeNetworkInterfaces page of 100 ENIs, is about 200 KiB.
const MaxResponse = 4 << 20

// ErrResponseTooLarge: an answer's body went past MaxResponse; the call is
// ended there (a hostile or broken endpoint streaming without end).
var ErrResponseTooLarge = fmt.Errorf("the ECS endpoint's answer is larger than %d MiB", MaxResponse>>20)

// callInfo is what the transport saw of one call's answer, carried in the
// request's context so that the SDK's errors (which lose the HTTP status
// when a body is not JSON) can be named precisely.
type callInfo struct {
	mu          sync.Mutex
	host        string
	status      int
	statusText  string
	contentType string
	tooLarge    bool
}

func (ci *callInfo) snapshot() (host string, status int, statusText, contentType string, tooLarge bool) {
	if ci == nil {
		return "", 0, "", "", false
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.host, ci.status, ci.statusText, ci.contentType, ci.tooLarge
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context) (context.Context, *callInfo) {
	ci := &callInfo{}
	return context.WithValue(ctx, callInfoKey{}, ci), ci
}

// sdkHTTP is the HTTP client the SDK is given (dara.HttpClient): our own
// transport, the request's context as the one deadline (the SDK's per-phase
// timeouts and its own transport are not used), and a cap on each body.
type sdkHTTP struct {
	hc  *http.Client
	max int64
}

func newSDKHTTP(timeout time.Duration) *sdkHTTP {
	tr := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	// No client Timeout: the request's context (one deadline per call, and
	// the caller's cancellation) ends the call and its body read.
	return &sdkHTTP{hc: &http.Client{Transport: tr}, max: MaxResponse}
}

// Call implements dara.HttpClient. The transport the SDK built is ignored.
func (s *sdkHTTP) Call(req *http.Request, _ *http.Transport) (*http.Response, error) {
	ci, _ := req.Context().Value(callInfoKey{}).(*callInfo)
	if ci != nil {
		ci.mu.Lock()
		ci.host = req.URL.Host
		ci.mu.Unlock()
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if ci != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		ci.mu.Lock()
		ci.status, ci.statusText, ci.contentType = resp.StatusCode, http.StatusText(resp.StatusCode), ct
		ci.mu.Unlock()
	}
	if resp.ContentLength > s.max {
		resp.Body.Close()
		if ci != nil {
			ci.mu.Lock()
			ci.tooLarge = true
			ci.mu.Unlock()
		}
		return nil, fmt.Errorf("%w (Content-Length %d)", ErrResponseTooLarge, resp.ContentLength)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: s.max, ci: ci}
	return resp, nil
}

func (s *sdkHTTP) close() { s.hc.CloseIdleConnections() }

// cappedBody fails a read past its cap and closes the connection there.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	ci   *callInfo
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the cap from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n == 0 {
			return 0, io.EOF
		}
		if b.ci != nil {
			b.ci.mu.Lock()
			b.ci.tooLarge = true
			b.ci.mu.Unlock()
		}
		b.rc.Close()
		return 0, ErrResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// isTimeout reports a call ended by its deadline or a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

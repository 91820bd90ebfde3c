package eri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	openapiutil "github.com/alibabacloud-go/darabonba-openapi/v2/utils"
	ecs "github.com/alibabacloud-go/ecs-20140526/v7/client"
	"github.com/alibabacloud-go/tea/dara"
	"github.com/aliyun/credentials-go/credentials"
)

// EndpointEnv overrides the ECS endpoint (private endpoints, tests).
const EndpointEnv = "ALIBABA_CLOUD_ECS_ENDPOINT"

// Config configures a Client. Region is required.
type Config struct {
	Region string
	// Endpoint is "host[:port]" or a URL ("http://127.0.0.1:8080"); "" means
	// $ALIBABA_CLOUD_ECS_ENDPOINT, else the SDK's regional endpoint.
	Endpoint string
	// Credential is used when set; nil means credentials-go's default chain.
	Credential credentials.Credential
	// Timeout is the one deadline of each API call, from the connection to
	// the answer's last byte; 0 means 10 s. The caller's context ends a call
	// sooner.
	Timeout time.Duration
	// Retries is how often a transient failure is tried again: a throttled
	// call up to Retries times, an HTTP 5xx answer up to min(Retries, 2)
	// times; 0 means 4, negative means none.
	Retries int
	// RetryBase is the first backoff (doubling); 0 means 1 s.
	RetryBase time.Duration
	Logger    *slog.Logger
}

// Client calls the ECS API for one region. Close it when done.
type Client struct {
	cfg    Config
	ecs    *ecs.Client
	http   *sdkHTTP
	log    *slog.Logger
	closed sync.Once
}

// New returns a Client. It makes no call: missing credentials show at the
// first call (or with CheckCredentials).
func New(cfg Config) (*Client, error) {
	if cfg.Region == "" {
		return nil, fmt.Errorf("eri: no region: %w", ErrNotOnECS)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 4
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	oc := &openapiutil.Config{
		RegionId:       dara.String(cfg.Region),
		ReadTimeout:    dara.Int(int(cfg.Timeout / time.Millisecond)),
		ConnectTimeout: dara.Int(int(cfg.Timeout / time.Millisecond)),
	}
	ep := cfg.Endpoint
	if ep == "" {
		ep = os.Getenv(EndpointEnv)
	}
	if ep != "" {
		host, proto, err := splitEndpoint(ep)
		if err != nil {
			return nil, err
		}
		oc.Endpoint = dara.String(host)
		oc.Protocol = dara.String(proto)
	}
	cred := cfg.Credential
	if cred == nil {
		var err error
		cred, err = credentials.NewCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("eri: %w: %w", ErrNoCredentials, err)
		}
	}
	oc.Credential = cred
	// The SDK's own HTTP client reads a body without bound and times each
	// phase separately; ours caps the body and takes one deadline from the
	// call's context.
	hc := newSDKHTTP(cfg.Timeout)
	oc.HttpClient = hc
	c, err := ecs.NewClient(oc)
	if err != nil {
		return nil, fmt.Errorf("eri: ECS client: %w", err)
	}
	return &Client{cfg: cfg, ecs: c, http: hc, log: log}, nil
}

// splitEndpoint accepts "host[:port]" or "http(s)://host[:port]".
func splitEndpoint(ep string) (host, proto string, err error) {
	proto = "https"
	switch {
	case strings.HasPrefix(ep, "http://"):
		proto, ep = "http", strings.TrimPrefix(ep, "http://")
	case strings.HasPrefix(ep, "https://"):
		ep = strings.TrimPrefix(ep, "https://")
	}
	ep = strings.TrimRight(ep, "/")
	if ep == "" || strings.ContainsAny(ep, "/ ?#@") {
		return "", "", fmt.Errorf("eri: ECS endpoint %q: want host[:port] or http(s)://host[:port]", ep)
	}
	return ep, proto, nil
}

// Close releases the client. Idempotent.
func (c *Client) Close() error {
	c.closed.Do(func() { c.http.close() })
	return nil
}

// CheckCredentials resolves the credential chain within ctx's deadline, so
// that a caller (the doctor) can skip quickly when there is none. Only the
// provider's name is returned, never a key.
func (c *Client) CheckCredentials(ctx context.Context) (provider string, err error) {
	type res struct {
		name string
		err  error
	}
	ch := make(chan res, 1)
	go func() { // the SDK has no context here; its own timeouts end it
		cm, err := c.ecs.Credential.GetCredential()
		if err != nil {
			ch <- res{err: err}
			return
		}
		ch <- res{name: dara.StringValue(cm.ProviderName)}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoCredentials, r.err)
		}
		return r.name, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%w: no credential source answered in time: %w", ErrNoCredentials, ctx.Err())
	}
}

// runtime returns the per-call options: the SDK's own retries are off
// (ours are bounded and logged) and its timeouts unused (our HTTP client
// takes the call's context).
func (c *Client) runtime() *dara.RuntimeOptions {
	ms := int(c.cfg.Timeout / time.Millisecond)
	return &dara.RuntimeOptions{ReadTimeout: dara.Int(ms), ConnectTimeout: dara.Int(ms)}
}

// maxServerRetries bounds the retries of an HTTP 5xx answer, fewer than a
// throttled call's: an endpoint that fails for good should not hold a
// command for long.
const maxServerRetries = 2

// call runs one API call under one deadline (Config.Timeout), retrying a
// transient failure (throttled, or an HTTP 5xx answer) with doubling
// backoff; the caller's context ends the call and the waits at once.
func (c *Client) call(ctx context.Context, action string, f func(ctx context.Context) error) error {
	delay := c.cfg.RetryBase
	for attempt := 0; ; attempt++ {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		cctx, ci := withCallInfo(cctx)
		err := f(cctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s: %w", action, ctx.Err())
		}
		err = apiError(action, err, ci, c.cfg.Timeout)
		c.log.Debug("ecs call", "action", action, "attempt", attempt+1, "took", time.Since(start), "err", err)
		limit := c.cfg.Retries
		if !errors.Is(err, ErrThrottled) {
			limit = min(limit, maxServerRetries)
		}
		if err == nil || !isTransient(err) || limit < 0 || attempt >= limit {
			if err != nil && isTransient(err) && attempt > 0 {
				return fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (while retrying: %w)", action, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay *= 2
	}
}

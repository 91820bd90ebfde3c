package erdma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// DefaultMetadataURL is the ECS instance metadata service.
const DefaultMetadataURL = "http://100.100.100.200"

// DefaultMetadataTimeout bounds a whole metadata lookup (token and every
// item): off Alibaba Cloud the address does not answer at all.
const DefaultMetadataTimeout = time.Second

// Errors of the metadata client, comparable with errors.Is.
var (
	// ErrMetadataUnavailable: the service could not be reached in time or
	// answered with an unexpected status.
	ErrMetadataUnavailable = errors.New("instance metadata service unavailable")
	// ErrMetadataToken: the service refused the token (401/403) even after
	// a fresh one was fetched.
	ErrMetadataToken = errors.New("instance metadata token refused")
	// ErrMetadataValue: an item's body is not what the item holds.
	ErrMetadataValue = errors.New("instance metadata value malformed")
)

// Metadata items read for an Instance (domain doc section 6).
const (
	mdInstanceID   = "meta-data/instance-id"
	mdInstanceType = "meta-data/instance/instance-type"
	mdRegionID     = "meta-data/region-id"
	mdMaxBody      = 4096
)

// MetadataClient reads the ECS instance metadata service with its token
// protocol: PUT latest/api/token with X-aliyun-ecs-metadata-token-ttl-seconds,
// then GETs carrying X-aliyun-ecs-metadata-token. The zero value is ready to
// use against the real service.
type MetadataClient struct {
	// BaseURL is the service's address; "" means DefaultMetadataURL.
	BaseURL string
	// Timeout bounds one whole Instance lookup; 0 means DefaultMetadataTimeout.
	Timeout time.Duration
	// TokenTTL is the token lifetime asked for; 0 means 60 s.
	TokenTTL time.Duration
	// HTTPClient is used when set; by default a client that ignores proxy
	// variables (the service is link-local to the instance).
	HTTPClient *http.Client
	// Cache, when set, keeps Instance's answer (or its failure) so that a
	// long-running caller asks the service once per Cache.TTL, not on every
	// use (the exporter's scrapes).
	Cache *MetadataCache
}

// MetadataCache keeps one Instance lookup for TTL (0: forever). Off
// Alibaba Cloud the service's address drops packets and a lookup costs its
// whole timeout; a failure is kept too, for at most FailTTL (0: a minute).
type MetadataCache struct {
	TTL, FailTTL time.Duration

	mu   sync.Mutex
	inst *Instance
	err  error
	at   time.Time
}

func (m *MetadataCache) instance(ctx context.Context, lookup func(context.Context) (*Instance, error)) (*Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ttl := m.TTL
	if m.err != nil {
		ttl = m.FailTTL
		if ttl <= 0 {
			ttl = time.Minute
		}
	}
	if !m.at.IsZero() && (ttl <= 0 && m.err == nil || time.Since(m.at) < ttl) {
		return m.copy()
	}
	inst, err := lookup(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, err // our caller gave up: nothing learnt about the service
	}
	m.inst, m.err, m.at = inst, err, time.Now()
	return m.copy()
}

func (m *MetadataCache) copy() (*Instance, error) {
	if m.err != nil {
		return nil, m.err
	}
	cp := *m.inst
	return &cp, nil
}

func (c *MetadataClient) base() string {
	if c.BaseURL == "" {
		return DefaultMetadataURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c *MetadataClient) client() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:       nil,
		DialContext: (&net.Dialer{Timeout: DefaultMetadataTimeout}).DialContext,
	}}
}

// Instance reads instance-id, instance-type and region-id. The whole lookup
// ends within Timeout; a token the service rejects mid-way (expired) is
// fetched again once.
func (c *MetadataClient) Instance(ctx context.Context) (*Instance, error) {
	if c.Cache != nil {
		return c.Cache.instance(ctx, c.lookup)
	}
	return c.lookup(ctx)
}

func (c *MetadataClient) lookup(ctx context.Context) (*Instance, error) {
	v, err := c.Items(ctx, mdInstanceID, mdInstanceType, mdRegionID)
	if err != nil {
		return nil, err
	}
	inst := &Instance{ID: v[0], Type: v[1], Region: v[2], Source: "metadata"}
	if err := validateInstance(inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// Items reads metadata items under latest/ ("meta-data/network/interfaces/
// macs/<mac>/gateway") with one token, all within Timeout.
func (c *MetadataClient) Items(ctx context.Context, items ...string) ([]string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultMetadataTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := c.client()
	if c.HTTPClient == nil {
		defer hc.CloseIdleConnections()
	}
	s := &mdSession{c: c, hc: hc}
	out := make([]string, 0, len(items))
	for _, it := range items {
		v, err := s.get(ctx, it)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// mdSession holds one token for the items of one lookup.
type mdSession struct {
	c     *MetadataClient
	hc    *http.Client
	token string
}

func (s *mdSession) fetchToken(ctx context.Context) error {
	ttl := s.c.TokenTTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.c.base()+"/latest/api/token", nil)
	if err != nil {
		return fmt.Errorf("metadata token: %w", err)
	}
	req.Header.Set("X-aliyun-ecs-metadata-token-ttl-seconds", strconv.Itoa(int(ttl/time.Second)))
	body, status, err := s.do(req)
	if err != nil {
		return fmt.Errorf("metadata token: %w: %w", ErrMetadataUnavailable, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("metadata token: PUT %s/latest/api/token: HTTP %d: %w", s.c.base(), status, ErrMetadataUnavailable)
	}
	tok := strings.TrimSpace(body)
	if tok == "" || !isPrintableASCII(tok) {
		return fmt.Errorf("metadata token: %q: %w", clip(tok, 40), ErrMetadataValue)
	}
	s.token = tok
	return nil
}

// get reads one item, fetching a token first and once more if the service
// says the token is no longer valid.
func (s *mdSession) get(ctx context.Context, item string) (string, error) {
	for attempt := 0; ; attempt++ {
		if s.token == "" {
			if err := s.fetchToken(ctx); err != nil {
				return "", err
			}
		}
		url := s.c.base() + "/latest/" + item
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", fmt.Errorf("metadata %s: %w", item, err)
		}
		req.Header.Set("X-aliyun-ecs-metadata-token", s.token)
		body, status, err := s.do(req)
		if err != nil {
			return "", fmt.Errorf("metadata %s: %w: %w", item, ErrMetadataUnavailable, err)
		}
		switch status {
		case http.StatusOK:
			v := strings.TrimSpace(body)
			if v == "" || !isPrintableASCII(v) {
				return "", fmt.Errorf("metadata %s: %q: %w", item, clip(v, 40), ErrMetadataValue)
			}
			return v, nil
		case http.StatusUnauthorized, http.StatusForbidden:
			if attempt > 0 {
				return "", fmt.Errorf("metadata %s: HTTP %d with a fresh token: %w", item, status, ErrMetadataToken)
			}
			s.token = ""
		default:
			return "", fmt.Errorf("metadata %s: GET %s: HTTP %d: %w", item, url, status, ErrMetadataUnavailable)
		}
	}
}

// do runs req and reads at most mdMaxBody bytes of its body.
func (s *mdSession) do(req *http.Request) (string, int, error) {
	resp, err := s.hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, mdMaxBody+1))
	if err != nil {
		return "", 0, fmt.Errorf("reading body: %w", err)
	}
	if len(b) > mdMaxBody {
		return "", 0, fmt.Errorf("body longer than %d bytes", mdMaxBody)
	}
	return string(b), resp.StatusCode, nil
}

// The length is checked apart (validInstanceID): a bounded repeat, as
// {0,127}, compiles into a program of 128 copies, 0.1 ms and 1,700
// allocations at every start of every binary that imports this package.
var (
	instanceIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	regionRE     = regexp.MustCompile(`^[a-z]{2,}(-[a-z0-9]+)+$`)
)

// validInstanceID: a letter or digit, then at most 127 of letters, digits,
// '_' and '-' ("i-bp67acfmxazb4p****").
func validInstanceID(id string) bool {
	return len(id) <= 128 && instanceIDRE.MatchString(id)
}

// validateInstance checks that what was read looks like what the items
// hold, so that garbage never reaches a report as an instance type.
func validateInstance(inst *Instance) error {
	if !validInstanceID(inst.ID) {
		return fmt.Errorf("instance-id %q: %w", clip(inst.ID, 40), ErrMetadataValue)
	}
	if _, err := ParseInstanceType(inst.Type); err != nil {
		return fmt.Errorf("instance-type: %w: %w", ErrMetadataValue, err)
	}
	if !regionRE.MatchString(inst.Region) {
		return fmt.Errorf("region-id %q: %w", clip(inst.Region, 40), ErrMetadataValue)
	}
	return nil
}

// ParseInstance reads a recorded instance (the JSON of Instance, as found
// at erdmakit/instance.json under a recorded root) and validates it. Source becomes "recorded".
// Once ctx is done it returns ctx's error, even while r blocks.
func ParseInstance(ctx context.Context, r io.Reader) (*Instance, error) {
	var inst Instance
	dec := json.NewDecoder(io.LimitReader(ctxio.NewReader(ctx, r), 1<<16))
	if err := dec.Decode(&inst); err != nil {
		return nil, fmt.Errorf("recorded instance: %w", err)
	}
	inst.Source = "recorded"
	if err := validateInstance(&inst); err != nil {
		return nil, fmt.Errorf("recorded instance: %w", err)
	}
	return &inst, nil
}

func isPrintableASCII(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// NetConfig is what the metadata service says one ENI's netdev should
// carry.
type NetConfig struct {
	MAC     string `json:"mac"`
	Address string `json:"address"` // "10.0.1.5/24"
	Gateway string `json:"gateway"`
}

// NetConfig reads one ENI's IPv4, prefix (vswitch-cidr-block) and gateway
// from the metadata service.
func (c *MetadataClient) NetConfig(ctx context.Context, mac string) (NetConfig, error) {
	p := "meta-data/network/interfaces/macs/" + strings.ToLower(mac) + "/"
	v, err := c.Items(ctx, p+"primary-ip-address", p+"vswitch-cidr-block", p+"gateway")
	if err != nil {
		return NetConfig{}, fmt.Errorf("metadata for %s: %w", mac, err)
	}
	// IPv4 only, in dotted-quad form: an IPv4-mapped IPv6 block
	// ("::ffff:192.168.10.0/120") would pass Contains with a 128-bit mask.
	ip := net.ParseIP(v[0]).To4()
	_, cidr, err := net.ParseCIDR(v[1])
	gw := net.ParseIP(v[2]).To4()
	v4 := err == nil && len(cidr.Mask) == net.IPv4len && !strings.Contains(v[0]+v[1]+v[2], ":")
	if v4 {
		if ones, _ := cidr.Mask.Size(); ones == 0 || ones > 30 {
			v4 = false
		}
	}
	if ip == nil || !v4 || gw == nil || !cidr.Contains(ip) || !cidr.Contains(gw) || ip.Equal(gw) {
		return NetConfig{}, fmt.Errorf("metadata for %s: ip %q, vswitch-cidr-block %q, gateway %q: %w",
			mac, v[0], v[1], v[2], ErrMetadataValue)
	}
	ones, _ := cidr.Mask.Size()
	return NetConfig{MAC: strings.ToLower(mac), Address: fmt.Sprintf("%s/%d", ip, ones), Gateway: gw.String()}, nil
}

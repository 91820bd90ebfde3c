package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/ctxio"
	"github.com/erdmakit/erdmakit/internal/safetext"
)

// ServiceAccountDir is where the kubelet mounts a pod's service-account
// token, the cluster's CA and the pod's namespace.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Limits on what the client reads from the API server.
const (
	// MaxResponse is the largest answer read (a node with many images, a
	// list of a Job's pods): a larger one is an error, never buffered.
	MaxResponse = 8 << 20
	// maxToken bounds the token file and maxCA the CA bundle.
	maxToken = 64 << 10
	maxCA    = 1 << 20
	// DefaultTimeout bounds one request, connection to last byte.
	DefaultTimeout = 30 * time.Second
)

// ErrNotInCluster: the process is not in a Kubernetes pod (no
// KUBERNETES_SERVICE_HOST, or no service-account token mounted).
var ErrNotInCluster = errors.New("kube: not in a Kubernetes pod (KUBERNETES_SERVICE_HOST unset or no service-account token under " + ServiceAccountDir + ")")

// Config says how to reach the API server.
type Config struct {
	// Server is the API server's base URL, "https://10.0.0.1:443".
	Server string
	// TokenFile is read before every request (the kubelet rotates projected
	// tokens); Token is used when TokenFile is "". Both "": no credentials.
	TokenFile string
	Token     string
	// CA is the PEM bundle the server's certificate must chain to; nil:
	// the system's roots.
	CA []byte
	// Timeout bounds each request (0: DefaultTimeout).
	Timeout time.Duration
	// Transport, when set, replaces the TLS transport built from CA (tests).
	Transport http.RoundTripper
	// UserAgent names the caller in the server's audit log.
	UserAgent string
}

// InPod reports whether this process runs in a Kubernetes pod, as the
// kubelet's environment says (getenv is os.Getenv in production).
func InPod(getenv func(string) string) bool {
	return getenv("KUBERNETES_SERVICE_HOST") != "" && getenv("KUBERNETES_SERVICE_PORT") != ""
}

// InClusterConfig is the Config of a pod: the API server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the token and CA from
// dir (ServiceAccountDir in production). ErrNotInCluster when either is
// missing.
func InClusterConfig(getenv func(string) string, dir string) (Config, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return Config{}, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrNotInCluster, err)
	}
	ca, err := ctxio.ReadFile(context.Background(), filepath.Join(dir, "ca.crt"), maxCA)
	if err != nil {
		return Config{}, fmt.Errorf("kube: the cluster's CA: %w", err)
	}
	return Config{Server: "https://" + net.JoinHostPort(host, port), TokenFile: tokenFile, CA: ca}, nil
}

// PodNamespace is the namespace the kubelet wrote into dir's namespace file
// (ServiceAccountDir in production).
func PodNamespace(dir string) (string, error) {
	b, err := ctxio.ReadFile(context.Background(), filepath.Join(dir, "namespace"), 256)
	if err != nil {
		return "", fmt.Errorf("kube: the pod's namespace: %w", err)
	}
	ns := strings.TrimSpace(string(b))
	if err := validName("namespace", ns); err != nil {
		return "", err
	}
	return ns, nil
}

// Client calls the few API server endpoints erdmakit needs. Safe for
// concurrent use.
type Client struct {
	base    *url.URL
	cfg     Config
	http    *http.Client
	timeout time.Duration
}

// NewClient checks cfg and returns its client.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("kube: server %q is not an http(s) URL", cfg.Server)
	}
	rt := cfg.Transport
	if rt == nil {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CA != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CA) {
				return nil, errors.New("kube: the CA bundle holds no PEM certificate")
			}
			tc.RootCAs = pool
		}
		rt = &http.Transport{
			Proxy:                  nil, // the API server is never reached through a proxy from a pod
			TLSClientConfig:        tc,
			DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  20 * time.Second,
			MaxIdleConns:           2,
			IdleConnTimeout:        90 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}
	}
	t := cfg.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "erdmakit"
	}
	return &Client{base: u, cfg: cfg, timeout: t, http: &http.Client{Transport: rt,
		// A redirect from the API server is not followed: the token would go along.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// InCluster is NewClient(InClusterConfig(os.Getenv, ServiceAccountDir)).
func InCluster() (*Client, error) {
	cfg, err := InClusterConfig(os.Getenv, ServiceAccountDir)
	if err != nil {
		return nil, err
	}
	return NewClient(cfg)
}

// APIError is an answer of the API server other than success: the request,
// its HTTP status, and the Status object's reason and message when the body
// was one.
type APIError struct {
	Method, Path string
	Code         int
	Reason       string // "Forbidden", "NotFound", ... ("" when the body said none)
	Message      string // escaped, at most 512 bytes
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("kube: %s %s: HTTP %d", e.Method, e.Path, e.Code)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// IsNotFound and IsForbidden say what an error from the client was.
func IsNotFound(err error) bool  { return apiCode(err) == http.StatusNotFound }
func IsForbidden(err error) bool { return apiCode(err) == http.StatusForbidden }

func apiCode(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// Patch types the client sends.
const (
	mergePatch     = "application/merge-patch+json"
	strategicPatch = "application/strategic-merge-patch+json"
)

// do sends one request and decodes a 2xx answer's JSON into out (nil: the
// body is read and dropped).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, contentType string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("kube: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	token := c.cfg.Token
	if c.cfg.TokenFile != "" {
		b, err := ctxio.ReadFile(ctx, c.cfg.TokenFile, maxToken)
		if err != nil {
			return fmt.Errorf("kube: the service-account token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("kube: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return fmt.Errorf("kube: %s %s: reading the answer: %w", method, path, err)
	}
	if len(data) > MaxResponse {
		return fmt.Errorf("kube: %s %s: the answer exceeds %d bytes", method, path, MaxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(method, path, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("kube: %s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// statusError builds the APIError of a non-2xx answer, from its Status
// object when the body is one.
func statusError(method, path string, code int, body []byte) error {
	e := &APIError{Method: method, Path: path, Code: code}
	var st struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		e.Reason = clip(safetext.Line(st.Reason), 64)
		e.Message = clip(safetext.Line(st.Message), 512)
	} else if len(body) > 0 {
		e.Message = clip(safetext.Line(string(body)), 512)
	}
	return e
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// validName checks an object or namespace name (a DNS-1123 subdomain) before
// it goes into a URL path.
func validName(what, s string) error {
	if s == "" || len(s) > 253 {
		return fmt.Errorf("kube: %s %q: want 1 to 253 characters", what, safetext.Line(s))
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.') {
			return fmt.Errorf("kube: %s %q: not a Kubernetes name (lower-case letters, digits, '-' and '.')", what, safetext.Line(s))
		}
	}
	return nil
}

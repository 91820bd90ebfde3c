package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/health"
)

func report(fs ...health.Finding) *erdma.Report {
	return &erdma.Report{Status: health.Status(fs), Findings: fs}
}

func finding(id string, sev health.Severity, summary string) health.Finding {
	return health.Finding{ID: id, Severity: sev, Summary: summary, Remediation: "modprobe x"}
}

func TestVerdictOf(t *testing.T) {
	tests := []struct {
		name                 string
		rep                  *erdma.Report
		err                  error
		ready, reason, label string
		status               string
		messageHas           []string
	}{
		{name: "healthy", rep: report(finding("erdma-devices", health.OK, "2 devices"), finding("verbs", health.Skip, "recorded")),
			ready: "True", reason: ReasonPassed, label: "true", status: "ok", messageHas: []string{"ok (1 ok, 1 skip)"}},
		{name: "no peermem fails", rep: report(finding("erdma-devices", health.OK, "2"), finding("gdr-peermem", health.Fail, "nvidia_peermem not loaded")),
			ready: "False", reason: "GdrPeermem", label: "false", status: "fail", messageHas: []string{"gdr-peermem: nvidia_peermem not loaded"}},
		{name: "warn stays ready", rep: report(finding("mtu", health.Warn, "MTU 1500")),
			ready: "True", reason: "Mtu", label: "true", status: "warn", messageHas: []string{"warn mtu: MTU 1500", "ack-erdma-controller's agent sets the MTU"}},
		{name: "fail and warn: the fails decide", rep: report(finding("mtu", health.Warn, "w"), finding("port-active", health.Fail, "down"), finding("gdr-peermem", health.Fail, "x")),
			ready: "False", reason: "PortActive,GdrPeermem", label: "false", status: "fail", messageHas: []string{"fail port-active", "fail gdr-peermem", "warn mtu"}},
		{name: "many fails", rep: report(finding("a", health.Fail, ""), finding("b", health.Fail, ""), finding("c", health.Fail, ""), finding("d-e", health.Fail, ""), finding("f", health.Fail, ""), finding("g", health.Fail, "")),
			ready: "False", reason: "A,B,C,DE,And2More", label: "false", status: "fail"},
		{name: "could not run", err: errors.New("open /host/sys: permission denied\x1b[2J"),
			ready: "Unknown", reason: ReasonCouldNotRun, label: "false", status: "unknown", messageHas: []string{`permission denied\x1b[2J`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := VerdictOf(tt.rep, tt.err)
			assert.Equal(t, tt.ready, v.Ready)
			assert.Equal(t, tt.reason, v.Reason)
			assert.Equal(t, map[string]string{LabelReady: tt.label, LabelStatus: tt.status}, v.Labels())
			for _, s := range tt.messageHas {
				assert.Contains(t, v.Message, s)
			}
			assert.LessOrEqual(t, len(v.Message), maxMessage+3)
			assert.NotContains(t, v.Message, "\x1b")
		})
	}
}

func TestVerdictMessageBounded(t *testing.T) {
	var fs []health.Finding
	for range 100 {
		fs = append(fs, finding("gdr-peermem", health.Fail, strings.Repeat("é", 50)))
	}
	v := VerdictOf(report(fs...), nil)
	assert.LessOrEqual(t, len(v.Message), maxMessage+3)
	assert.True(t, strings.HasSuffix(v.Message, "..."))
}

func TestWithControllerSteps(t *testing.T) {
	rep := report(finding("erdma-driver", health.Fail, "no module"), finding("gdr-peermem", health.Fail, "x"), finding("mtu", health.OK, "8500"))
	out := WithControllerSteps(rep, "node-7")
	assert.Equal(t, "on Kubernetes: ack-erdma-controller's agent installs the driver (kubectl -n kube-system logs ds/alibabacloud-erdma-agent; its --prefer-driver); on the host itself: modprobe x", out.Findings[0].Remediation)
	assert.Equal(t, "modprobe x", out.Findings[1].Remediation, "nvidia_peermem is not the controller's")
	assert.Equal(t, "modprobe x", out.Findings[2].Remediation, "a passing check keeps its text")
	assert.Equal(t, "modprobe x", rep.Findings[0].Remediation, "the report passed in is not changed")
	out = WithControllerSteps(report(finding("erdma-devices", health.Fail, "none")), "node-7")
	assert.Contains(t, out.Findings[0].Remediation, "kubectl get erdmadevices node-7 -o yaml")
	assert.Nil(t, WithControllerSteps(nil, ""))
	assert.Contains(t, ControllerChecks(), "erdma-devices")
}

func TestNodeAgentPatchesOnlyWhatChanged(t *testing.T) {
	f, c := newFakeAPI(t)
	raw, err := os.ReadFile("testdata/node.json")
	require.NoError(t, err)
	f.addNode(t, raw)
	name := "cn-hangzhou.10.0.1.17"
	now := time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)
	rep := report(finding("erdma-devices", health.OK, "2"))
	a := &NodeAgent{Client: c, Node: name, Now: func() time.Time { return now },
		Doctor: func(context.Context) (*erdma.Report, error) { return rep, nil }}
	ctx := t.Context()

	// The node had ERDMAReady False (no peermem); now healthy.
	s, err := a.Once(ctx)
	require.NoError(t, err)
	assert.True(t, s.Changed)
	assert.True(t, s.ConditionPatched)
	assert.True(t, s.LabelsPatched)
	n, err := c.GetNode(ctx, name)
	require.NoError(t, err)
	cond, ok := n.Condition(ConditionType)
	require.True(t, ok)
	assert.Equal(t, ConditionTrue, cond.Status)
	assert.Equal(t, ReasonPassed, cond.Reason)
	assert.Equal(t, now, cond.LastTransitionTime)
	assert.Equal(t, "true", n.Labels[LabelReady])
	assert.Equal(t, "ok", n.Labels[LabelStatus])
	assert.Equal(t, "true", n.Labels["aliyun.accelerator/erdma"], "other labels stay")
	_, ok = n.Condition("Ready")
	assert.True(t, ok, "other conditions stay")

	// Same verdict a minute later: nothing written.
	now = now.Add(time.Minute)
	patches := f.count("PATCH")
	s, err = a.Once(ctx)
	require.NoError(t, err)
	assert.Equal(t, Sync{Verdict: s.Verdict}, s)
	assert.Equal(t, patches, f.count("PATCH"))

	// The heartbeat is due: the condition only, its transition time kept.
	now = now.Add(DefaultHeartbeat)
	s, err = a.Once(ctx)
	require.NoError(t, err)
	assert.True(t, s.ConditionPatched)
	assert.False(t, s.Changed)
	assert.False(t, s.LabelsPatched)
	n, err = c.GetNode(ctx, name)
	require.NoError(t, err)
	cond, _ = n.Condition(ConditionType)
	assert.Equal(t, now, cond.LastHeartbeatTime)
	assert.Equal(t, time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC), cond.LastTransitionTime)

	// peermem unloaded: False at once, with the check id.
	now = now.Add(time.Minute)
	rep = report(finding("gdr-peermem", health.Fail, "nvidia_peermem not loaded"))
	s, err = a.Once(ctx)
	require.NoError(t, err)
	assert.True(t, s.Changed && s.ConditionPatched && s.LabelsPatched)
	n, err = c.GetNode(ctx, name)
	require.NoError(t, err)
	cond, _ = n.Condition(ConditionType)
	assert.Equal(t, ConditionFalse, cond.Status)
	assert.Equal(t, "GdrPeermem", cond.Reason)
	assert.Contains(t, cond.Message, "gdr-peermem")
	assert.Equal(t, now, cond.LastTransitionTime)
	assert.Equal(t, "false", n.Labels[LabelReady])

	// Uninstall.
	require.NoError(t, c.ClearNode(ctx, name))
	n, err = c.GetNode(ctx, name)
	require.NoError(t, err)
	_, ok = n.Condition(ConditionType)
	assert.False(t, ok)
	assert.NotContains(t, n.Labels, LabelReady)
}

func TestNodeAgentErrors(t *testing.T) {
	_, c := newFakeAPI(t)
	a := &NodeAgent{Client: c, Node: "missing", Doctor: func(context.Context) (*erdma.Report, error) { return report(), nil }}
	_, err := a.Once(t.Context())
	require.Error(t, err)
	assert.True(t, IsNotFound(err))
	assert.Contains(t, err.Error(), `kube: GET /api/v1/nodes/missing: HTTP 404 NotFound: nodes "missing" not found`)

	a.Node = "../secrets"
	_, err = a.Once(t.Context())
	assert.ErrorContains(t, err, "not a Kubernetes name")

	_, err = (&NodeAgent{}).Once(t.Context())
	assert.Error(t, err)
}

func TestNodeAgentRunStopsWithContext(t *testing.T) {
	f, c := newFakeAPI(t)
	raw, err := os.ReadFile("testdata/node.json")
	require.NoError(t, err)
	f.addNode(t, raw)
	ctx, cancel := context.WithCancel(t.Context())
	rounds := 0
	a := &NodeAgent{Client: c, Node: "cn-hangzhou.10.0.1.17", Interval: time.Millisecond,
		Doctor: func(context.Context) (*erdma.Report, error) {
			rounds++
			if rounds == 3 {
				cancel()
			}
			return report(), nil
		}}
	assert.ErrorIs(t, a.Run(ctx), context.Canceled)
	assert.Equal(t, 3, rounds)
}

func TestHostileAnswers(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"kind":"Node","metadata":{"name":"n","labels":{"x":"`))
			chunk := []byte(strings.Repeat("a", 1<<16))
			for range MaxResponse/len(chunk) + 2 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "exceeds"},
		{"not json", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>proxy login</html>")) }, "not the JSON expected"},
		{"wrong kind", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"kind":"Secret","metadata":{"name":"n"}}`))
		}, `kind "Secret"`},
		{"bad name", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"kind":"Node","metadata":{"name":"n/../x"}}`))
		}, "not a Kubernetes name"},
		{"error page with escapes", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = w.Write([]byte("bad gateway\x1b]0;pwned\x07" + strings.Repeat("x", 2000)))
		}, `HTTP 502: bad gateway\x1b]0;pwned\a`},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://evil.example/steal", http.StatusFound)
		}, "HTTP 302"},
		{"hangs", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := NewClient(Config{Server: srv.URL, Timeout: 300 * time.Millisecond})
			require.NoError(t, err)
			_, err = c.GetNode(t.Context(), "n")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\x1b")
			assert.Less(t, len(err.Error()), 800)
		})
	}
}

func TestNewClientRejects(t *testing.T) {
	for _, s := range []string{"", "ftp://x", "10.0.0.1:443", "https://"} {
		_, err := NewClient(Config{Server: s})
		assert.Error(t, err, s)
	}
	_, err := NewClient(Config{Server: "https://10.0.0.1", CA: []byte("not pem")})
	assert.ErrorContains(t, err, "no PEM certificate")
}

func TestInClusterConfig(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	_, err := InClusterConfig(getenv, dir)
	assert.ErrorIs(t, err, ErrNotInCluster)
	assert.False(t, InPod(getenv))
	env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"] = "fd00::1", "443"
	assert.True(t, InPod(getenv))
	_, err = InClusterConfig(getenv, dir)
	assert.ErrorIs(t, err, ErrNotInCluster, "no token")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o600))
	_, err = InClusterConfig(getenv, dir)
	assert.ErrorContains(t, err, "CA")

	// A real CA from an httptest TLS server: the token file is read on
	// every request (the kubelet rotates it).
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"kind":"Node","metadata":{"name":"n"}}`))
	}))
	defer srv.Close()
	writeCA(t, srv, filepath.Join(dir, "ca.crt"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "namespace"), []byte("erdmakit"), 0o600))
	cfg, err := InClusterConfig(getenv, dir)
	require.NoError(t, err)
	assert.Equal(t, "https://[fd00::1]:443", cfg.Server)
	cfg.Server = srv.URL
	c, err := NewClient(cfg)
	require.NoError(t, err)
	_, err = c.GetNode(t.Context(), "n")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("rotated"), 0o600))
	_, err = c.GetNode(t.Context(), "n")
	require.NoError(t, err)
	assert.Equal(t, []string{"Bearer tok", "Bearer rotated"}, got)
	ns, err := PodNamespace(dir)
	require.NoError(t, err)
	assert.Equal(t, "erdmakit", ns)

	// Without the cluster's CA (the system's roots) the server is refused.
	cfg.CA = nil
	c, err = NewClient(cfg)
	require.NoError(t, err)
	_, err = c.GetNode(t.Context(), "n")
	assert.ErrorContains(t, err, "certificate")
}

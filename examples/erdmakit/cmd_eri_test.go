package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/health"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eriEnv points the CLI at a fake ECS endpoint holding a fresh ebmgn8is
// instance with one Standard primary ENI, credentials in the environment;
// the RAM-role path is disabled so nothing can reach 100.100.100.200.
func eriEnv(t *testing.T) (*ecsfake.Server, []string) {
	t.Helper()
	f := &ecsfake.Server{AccessKeyID: "LTAI5tCLIFake", AccessKeySecret: "cli-fake-secret",
		Types: map[string]ecsfake.Type{"ecs.ebmgn8is.32xlarge": {ID: "ecs.ebmgn8is.32xlarge", EriQuantity: 2,
			Cards: []int{0, 1}, GPUAmount: 8, GPUSpec: "NVIDIA L20", BandwidthRx: 160000000, QPs: 8}}}
	f.AddENI(ecsfake.ENI{ID: "eni-primary", MAC: "00:16:3e:2f:37:70", Type: "Primary", Mode: "Standard",
		IP: "192.168.10.11", Status: "InUse", InstanceID: "i-cli", VSwitchID: "vsw-1", SecurityGroups: []string{"sg-1"}})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", f.AccessKeyID)
	t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", f.AccessKeySecret)
	t.Setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
	t.Setenv(eri.EndpointEnv, srv.URL)
	return f, []string{"--region", "cn-hangzhou", "--instance-id", "i-cli", "--instance-type", "ecs.ebmgn8is.32xlarge",
		"--root", hostDir("ebmgn8is-healthy")}
}

func TestERIAttachDryRunThenAttachThenStatus(t *testing.T) {
	f, flags := eriEnv(t)
	code, out, stderr := runCLI(append([]string{"eri", "attach", "--dry-run"}, flags...)...)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "0 ERI(s) attached, 2 wanted; calls it would make (dry run: none made):")
	assert.Regexp(t, `CreateNetworkInterface ClientToken=erdmakit-i-cli-eri-0-[0-9a-f]{8} NetworkInterfaceName=erdmakit-eri-0 `+
		`NetworkInterfaceTrafficMode=HighPerformance QueuePairNumber=8 RegionId=cn-hangzhou SecurityGroupIds.1=sg-1 `+
		`Tag.1.Key=erdmakit:creator Tag.1.Value=erdmakit Tag.2.Key=erdmakit:instance-id Tag.2.Value=i-cli VSwitchId=vsw-1`, out)
	assert.Contains(t, out, "AttachNetworkInterface InstanceId=i-cli NetworkCardIndex=1 NetworkInterfaceId=<created above> RegionId=cn-hangzhou")
	assert.Zero(t, f.Count("CreateNetworkInterface"))

	code, out, stderr = runCLI(append([]string{"eri", "attach", "--wait", "10s"}, flags...)...)
	require.Equal(t, ExitOK, code, "%s\n%s", out, stderr)
	assert.Contains(t, stderr, "attaching eni-fake0002 on NetworkCardIndex 1")
	assert.Contains(t, out, "calls made:\n  CreateNetworkInterface ClientToken=erdmakit-i-cli-eri-0-")
	assert.Contains(t, out, "  AttachNetworkInterface InstanceId=i-cli NetworkCardIndex=1 NetworkInterfaceId=eni-fake0002 RegionId=cn-hangzhou -> ok")
	assert.Contains(t, out, "ERI eni-fake0001 mac 00:16:3e:aa:00:01 NetworkCardIndex 0 InUse")
	assert.Contains(t, out, "now 2 ERI(s) attached, 2 wanted\nnext: erdmakit eri configure")

	code, out, _ = runCLI(append([]string{"eri", "attach"}, flags...)...)
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "2 ERI(s) attached on distinct cards, 2 wanted: nothing to do\n"+
		"ERI eni-fake0001 mac 00:16:3e:aa:00:01 NetworkCardIndex 0 InUse\n"+
		"ERI eni-fake0002 mac 00:16:3e:aa:00:02 NetworkCardIndex 1 InUse\n"+
		"now 2 ERI(s) attached, 2 wanted\n", out)

	// The fake's new ERIs have no netdev on the fixture: the doctor's
	// eri-mode says fail, and so does eri status (one fact, one severity).
	code, out, stderr = runCLI(append([]string{"eri", "status", "--json"}, flags...)...)
	require.Equal(t, ExitFail, code, stderr)
	var st struct {
		eri.Status
		Findings []health.Finding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.ENIs, 3)
	assert.Equal(t, "eth0", st.ENIs[0].Netdev, "the primary matched by MAC")
	assert.Equal(t, 2, st.View.TypeInfo.EriQuantity)
	require.Len(t, st.Findings, 2)
	assert.Equal(t, "network-card-channel", st.Findings[0].ID)
	assert.Equal(t, health.OK, st.Findings[0].Severity)
	assert.Equal(t, "eri-mode", st.Findings[1].ID)
	assert.Equal(t, health.Fail, st.Findings[1].Severity)

	code, out, _ = runCLI(append([]string{"eri", "status"}, flags...)...)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "EriQuantity 2, network cards [0 1], 8 x NVIDIA L20, bandwidth 160 Gbit/s")
	assert.Contains(t, out, "fail: eri-mode: ERI eni-fake0001 (00:16:3e:aa:00:01) has no netdev in the OS")
}

// TestERIAttachFailureIsHonest: after a refused call the output listed
// every planned call under "calls made:" and "next: erdmakit eri
// configure"; now only the calls made, what exists, and no next step;
// Forbidden is exit 3 with the RAM policy (issue 27 item 13, issue 25).
func TestERIAttachFailureIsHonest(t *testing.T) {
	f, flags := eriEnv(t)
	f.Fail("CreateNetworkInterface", ecsfake.Fault{Code: "Forbidden.RAM", Status: 403})
	code, out, stderr := runCLI(append([]string{"eri", "attach", "--wait", "10s"}, flags...)...)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, `"ecs:CreateNetworkInterface"`, "the RAM policy")
	assert.Contains(t, out, "calls made:\n  CreateNetworkInterface ")
	assert.Contains(t, out, "-> error: Forbidden.RAM (HTTP 403): User not authorized")
	assert.NotContains(t, out, "AttachNetworkInterface")
	assert.NotContains(t, out, "next:")
	assert.Contains(t, out, "now 0 ERI(s) attached, 2 wanted")

	f.ClearFaults()
	f.Fail("AttachNetworkInterface", ecsfake.Fault{Code: "ServiceUnavailable", Status: 503})
	code, out, _ = runCLI(append([]string{"eri", "attach", "--wait", "10s"}, flags...)...)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, out, "not attached: eni-fake0001 (Available): a rerun of erdmakit eri attach attaches it; "+
		"to delete it instead: aliyun ecs DeleteNetworkInterface --RegionId cn-hangzhou --NetworkInterfaceId eni-fake0001")
	assert.NotContains(t, out, "next:")
}

// TestERISharedCardCLI: eri status fails two ERIs on one card, with the
// remedy; attach plans the move and, the instance running, refuses it.
func TestERISharedCardCLI(t *testing.T) {
	f, flags := eriEnv(t)
	for i, mac := range []string{"00:16:3e:2f:37:75", "00:16:3e:2f:37:76"} {
		f.AddENI(ecsfake.ENI{ID: "eni-eri" + strconv.Itoa(i), MAC: mac, Type: "Secondary", Mode: "HighPerformance",
			Status: "InUse", InstanceID: "i-cli", CardIndex: 0, DeviceIndex: i + 1, QueuePairNumber: 8})
	}
	code, out, _ := runCLI(append([]string{"eri", "status"}, flags...)...)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, out, "fail: network-card-channel: eni-eri0 and eni-eri1 on NetworkCardIndex 0")
	assert.Contains(t, out, "fix: move one to a free card: stop the instance first")

	code, out, _ = runCLI(append([]string{"eri", "attach", "--dry-run"}, flags...)...)
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "note: ERIs eni-eri0 and eni-eri1 share NetworkCardIndex 0")
	assert.Contains(t, out, "  DetachNetworkInterface InstanceId=i-cli NetworkInterfaceId=eni-eri1 RegionId=cn-hangzhou\n"+
		"  AttachNetworkInterface InstanceId=i-cli NetworkCardIndex=1 NetworkInterfaceId=eni-eri1 RegionId=cn-hangzhou")

	code, out, stderr := runCLI(append([]string{"eri", "attach"}, flags...)...)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, stderr, "i-cli is Running: moving an ERI to another network card detaches it")
	assert.Contains(t, out, "no call made")
	assert.NotContains(t, out, "next:")
}

func TestERIErrorsExitCodes(t *testing.T) {
	f, flags := eriEnv(t)
	f.Fail("DescribeInstanceTypes", ecsfake.Fault{Code: "Forbidden.RAM", Status: 403, Times: 1})
	code, _, stderr := runCLI(append([]string{"eri", "status"}, flags...)...)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "Forbidden.RAM")
	assert.Contains(t, stderr, `"ecs:DescribeNetworkInterfaces"`)

	code, _, stderr = runCLI(append([]string{"eri", "convert", "eni-nope"}, flags...)...)
	assert.Equal(t, ExitFail, code)
	assert.Contains(t, stderr, "eni-nope is not attached to i-cli")

	t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "")
	t.Setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "")
	t.Setenv("HOME", t.TempDir())
	code, _, stderr = runCLI(append([]string{"eri", "status"}, flags...)...)
	assert.Equal(t, ExitUnknown, code)
	assert.Contains(t, stderr, "no Alibaba Cloud credentials")
}

// TestRecordCloudView: record --cloud stores what the API said, without the
// credentials, and a replay reads it back.
func TestRecordCloudView(t *testing.T) {
	f, flags := eriEnv(t)
	out := filepath.Join(t.TempDir(), "h.tar.gz")
	code, _, stderr := runCLI(append([]string{"record", "--cloud", "--out", out}, flags...)...)
	require.Equal(t, ExitOK, code, stderr)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	all, err := io.ReadAll(gz)
	require.NoError(t, err)
	assert.NotContains(t, string(all), f.AccessKeySecret, "no secret in the recording")
	assert.NotContains(t, string(all), f.AccessKeyID, "no key id in the recording")

	h, closer, err := erdma.OpenHost(t.Context(), out)
	require.NoError(t, err)
	defer closer.Close()
	v, err := eri.RecordedView(t.Context(), h)
	require.NoError(t, err)
	require.NotNil(t, v)
	assert.Equal(t, "recorded", v.Source)
	assert.Equal(t, "eni-primary", v.ENIs[0].ID)
	assert.Equal(t, 2, v.TypeInfo.EriQuantity)
}

func findingOf(t *testing.T, rep *erdma.Report, id string) health.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no finding %s", id)
	return health.Finding{}
}

// TestDoctorReplaysRecordedCloudView: a recording made with --cloud gives
// the doctor the real channel check; one without gives today's report.
func TestDoctorReplaysRecordedCloudView(t *testing.T) {
	for name, cards := range map[string][2]int{"distinct channels": {0, 1}, "one channel": {1, 1}} {
		t.Run(name, func(t *testing.T) {
			f, flags := eriEnv(t)
			// The fixture's eth1/eth2 (erdma_0/erdma_1) are the instance's two ERIs.
			for i, mac := range []string{"00:16:3e:2f:37:75", "00:16:3e:2f:37:76"} {
				f.AddENI(ecsfake.ENI{ID: "eni-eri" + strconv.Itoa(i), MAC: mac, Type: "Secondary", Mode: "HighPerformance",
					Status: "InUse", InstanceID: "i-cli", CardIndex: cards[i], DeviceIndex: i + 1})
			}
			out := filepath.Join(t.TempDir(), "h.tar.gz")
			code, _, stderr := runCLI(append([]string{"record", "--cloud", "--out", out}, flags...)...)
			require.Equal(t, ExitOK, code, stderr)
			t.Setenv(eri.EndpointEnv, "http://127.0.0.1:1") // a replay asks nothing

			code, js, stderr := runCLI("doctor", "--json", "--root", out)
			var rep erdma.Report
			require.NoError(t, json.Unmarshal([]byte(js), &rep), stderr)
			ch := findingOf(t, &rep, "network-card-channel")
			assert.Contains(t, strings.Join(ch.Evidence, "\n"), "DescribeNetworkInterfaces (recorded): eni-eri0 mac 00:16:3e:2f:37:75 NetworkCardIndex")
			assert.Equal(t, health.OK, findingOf(t, &rep, "eri-mode").Severity)
			if cards[0] == cards[1] {
				assert.Equal(t, ExitFail, code)
				assert.Equal(t, health.Fail, ch.Severity)
				assert.Contains(t, ch.Summary, "eni-eri0 and eni-eri1 on NetworkCardIndex 1")
				assert.Contains(t, ch.Remediation, "erdmakit eri attach")
			} else {
				assert.Equal(t, ExitOK, code, js)
				assert.Equal(t, health.OK, ch.Severity)
			}
		})
	}

	// The same fixture without a recorded view: exactly the doctor's report without cloud checks.
	_, withCloud, _ := runCLI("doctor", "--json", "--root", hostDir("ebmgn8is-healthy"))
	_, without, _ := runCLI("doctor", "--json", "--cloud", "off", "--root", hostDir("ebmgn8is-healthy"))
	assert.Equal(t, without, withCloud)
}

// TestDoctorLiveWithoutCloud: on this (non-ECS) host without an instance the
// cloud checks cost nothing and say why they were skipped.
func TestDoctorLiveWithoutCloud(t *testing.T) {
	t.Setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
	start := time.Now()
	_, js, stderr := runCLI("doctor", "--json", "--no-metadata", "--interval", "0", "--skip-tools")
	took := time.Since(start)
	var rep erdma.Report
	require.NoError(t, json.Unmarshal([]byte(js), &rep), stderr)
	m := findingOf(t, &rep, "eri-mode")
	assert.Equal(t, health.Skip, m.Severity)
	assert.Contains(t, m.Summary, "not on an ECS instance")
	start = time.Now()
	runCLI("doctor", "--json", "--no-metadata", "--interval", "0", "--skip-tools", "--cloud", "off")
	assert.Less(t, took-time.Since(start), time.Second, "the cloud checks add well under a second")
}

// TestERIUnusableEndpointExits3: an HTML 502 page, garbage or an endpoint
// that does not answer is "could not run" (exit 3, was 2), and the message
// names the HTTP status and the endpoint instead of the decoder's words
// (issue 27 item 7).
func TestERIUnusableEndpointExits3(t *testing.T) {
	_, flags := eriEnv(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
	}))
	defer html.Close()
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	for name, tc := range map[string]struct{ url, want string }{
		"html 502": {html.URL, "HTTP 502 Bad Gateway from " + strings.TrimPrefix(html.URL, "http://")},
		"silent":   {silent.URL, "no answer from " + strings.TrimPrefix(silent.URL, "http://") + " within 1s"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(eri.EndpointEnv, tc.url)
			code, _, stderr := runCLI(append([]string{"eri", "status", "--timeout", "1s"}, flags...)...)
			assert.Equal(t, ExitUnknown, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "<html")
			assert.NotContains(t, stderr, "invalid character")
		})
	}
}

// TestERISignalDuringBodyRead: SIGTERM/SIGINT while an ECS answer trickles
// in took 5 s (the SDK's body read ignored the context); now the call is
// ended with the context (issue 27 items 2 and 3).
func TestERISignalDuringBodyRead(t *testing.T) {
	_, flags := eriEnv(t)
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"RequestId":"`))
		for r.Context().Err() == nil {
			if _, err := w.Write([]byte("aaaa")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	}))
	defer srv.Close()
	t.Setenv(eri.EndpointEnv, srv.URL)
	bin := buildCLI(t)
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		asked.Store(0)
		took, code, stderr := signalRun{bin: bin, args: append([]string{"eri", "status", "--timeout", "60s"}, flags...),
			ready: func() bool { return asked.Load() > 0 }, sigs: []syscall.Signal{s}, limit: 10 * time.Second}.run(t)
		assert.Equal(t, ExitUnknown, code, stderr)
		assert.Less(t, took, time.Second+500*time.Millisecond, "%v to exit", s)
	}
}

// hardening-3 items 8 and 28: a server's error text reaches the terminal
// without its escape sequences, forged lines or echoed credentials.
func TestERIServerTextIsEscapedAndCredentialsStripped(t *testing.T) {
	f, flags := eriEnv(t)
	f.Fail("DescribeNetworkInterfaces", ecsfake.Fault{Code: "InternalError", Status: 500, Times: 99,
		Message: "boom\x1b]0;owned\a\x1b[2J\nerdmakit: all good (exit 0)\n" +
			"SecurityToken=CAISabcdefghijklmnopqrstuvwxyz0123 AccessKeyId=LTAI5tCLIFake"})
	_, out, stderr := runCLI(append([]string{"eri", "status"}, flags...)...)
	all := out + stderr
	assert.NotContains(t, all, "\x1b", "no escape sequence from the server reaches the terminal")
	assert.NotContains(t, all, "\a")
	for _, line := range strings.Split(all, "\n") {
		assert.False(t, strings.HasPrefix(line, "erdmakit: all good"), "forged line %q", line)
	}
	assert.NotContains(t, all, "CAISabcdefghijklmnopqrstuvwxyz0123")
	assert.NotContains(t, all, "LTAI5tCLIFake")
	assert.Contains(t, stderr, `boom\x1b]0;owned\a\x1b[2J\nerdmakit: all good (exit 0)\nSecurityToken=<redacted> AccessKeyId=<redacted>`)
}

// TestRecordCloudViewRedacted: --redact used to drop the cloud view; now
// its ids, MACs and IPs are redacted like the rest of the recording, and
// the doctor still judges the channel layout and matches ERIs to netdevs
// (issue 27 item 14).
func TestRecordCloudViewRedacted(t *testing.T) {
	f, flags := eriEnv(t)
	for i, mac := range []string{"00:16:3e:2f:37:75", "00:16:3e:2f:37:76"} {
		f.AddENI(ecsfake.ENI{ID: "eni-secret" + strconv.Itoa(i), MAC: mac, Type: "Secondary", Mode: "HighPerformance",
			IP: "172.16.5." + strconv.Itoa(20+i), Status: "InUse", InstanceID: "i-cli", CardIndex: 1, DeviceIndex: i + 1,
			VSwitchID: "vsw-secret", SecurityGroups: []string{"sg-secret"}})
	}
	out := filepath.Join(t.TempDir(), "h.tar.gz")
	code, _, stderr := runCLI(append([]string{"record", "--cloud", "--redact", "--out", out}, flags...)...)
	require.Equal(t, ExitOK, code, stderr)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	all, err := io.ReadAll(gz)
	require.NoError(t, err)
	for _, secret := range []string{"eni-secret", "eni-primary", "00:16:3e:2f:37:75", "172.16.5.20", "i-cli", "vsw-secret", "sg-secret", "cn-hangzhou"} {
		assert.NotContains(t, string(all), secret)
	}

	h, closer, err := erdma.OpenHost(t.Context(), out)
	require.NoError(t, err)
	defer closer.Close()
	v, err := eri.RecordedView(t.Context(), h)
	require.NoError(t, err)
	require.NotNil(t, v, "the view is kept, redacted")
	require.Len(t, v.ERIs(), 2)
	assert.Equal(t, "eni-redacted2", v.ERIs()[0].ID)
	assert.Equal(t, map[int][]string{1: {"eni-redacted2", "eni-redacted3"}}, v.SharedChannels())

	t.Setenv(eri.EndpointEnv, "http://127.0.0.1:1") // a replay asks nothing
	code, js, stderr := runCLI("doctor", "--json", "--root", out)
	assert.Equal(t, ExitFail, code)
	var rep erdma.Report
	require.NoError(t, json.Unmarshal([]byte(js), &rep), stderr)
	assert.Equal(t, health.Fail, findingOf(t, &rep, "network-card-channel").Severity)
	assert.Equal(t, health.OK, findingOf(t, &rep, "eri-mode").Severity, "ERIs still match the redacted netdevs by MAC")
}

// TestFleetDoctorCloudOptIn: fleet doctor ran no cloud check; --cloud adds
// them on every rank (here one rank on a recording with two ERIs on one
// card), and without it the report is as before (issue 27 item 14).
func TestFleetDoctorCloudOptIn(t *testing.T) {
	f, flags := eriEnv(t)
	for i, mac := range []string{"00:16:3e:2f:37:75", "00:16:3e:2f:37:76"} {
		f.AddENI(ecsfake.ENI{ID: "eni-eri" + strconv.Itoa(i), MAC: mac, Type: "Secondary", Mode: "HighPerformance",
			Status: "InUse", InstanceID: "i-cli", CardIndex: 1, DeviceIndex: i + 1})
	}
	out := filepath.Join(t.TempDir(), "h.tar.gz")
	code, _, stderr := runCLI(append([]string{"record", "--cloud", "--out", out}, flags...)...)
	require.Equal(t, ExitOK, code, stderr)
	problems := func(extra ...string) []string {
		args := append([]string{"fleet", "doctor", "--rank", "0", "--ranks", "1", "--rendezvous",
			"127.0.0.1:" + strconv.Itoa(fixture.FreePort(t)), "--root", out, "--json", "--join-timeout", "20s"}, extra...)
		_, js, stderr := runCLI(args...)
		var rep struct {
			Hosts []struct {
				Problems []string `json:"problems"`
			} `json:"hosts"`
		}
		require.NoError(t, json.Unmarshal([]byte(js), &rep), "%s\n%s", js, stderr)
		require.Len(t, rep.Hosts, 1)
		return rep.Hosts[0].Problems
	}
	assert.NotContains(t, problems(), "network-card-channel", "off by default")
	assert.Contains(t, problems("--cloud", "on"), "network-card-channel")
}

// TestERIEndlessBodyEveryCommand: status, attach --dry-run and record
// --cloud grew to GBs and ran 22-50 s against an endpoint streaming an
// endless body (exit 2); each now stops at the 4 MiB cap at once, exit 3
// (issue 27 item 2).
func TestERIEndlessBodyEveryCommand(t *testing.T) {
	_, flags := eriEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"RequestId":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	t.Setenv(eri.EndpointEnv, srv.URL)
	for _, args := range [][]string{{"eri", "status"}, {"eri", "attach", "--dry-run"},
		{"record", "--cloud", "--out", filepath.Join(t.TempDir(), "h.tar.gz")}} {
		start := time.Now()
		code, _, stderr := runCLI(append(args, flags...)...)
		assert.Equal(t, ExitUnknown, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "is larger than 4 MiB: ended there", "%v", args)
		assert.Less(t, time.Since(start), 5*time.Second, "%v", args)
	}
}

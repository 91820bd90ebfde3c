package setup_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alibabacloud-go/tea/tea"
	"github.com/aliyun/credentials-go/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/doctor"
	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/eri"
	"github.com/erdmakit/erdmakit/internal/ecsfake"
	"github.com/erdmakit/erdmakit/internal/fixture"
	"github.com/erdmakit/erdmakit/setup"
)

const (
	cloudAK   = "LTAI5tFakeKeyForTests"
	cloudSK   = "fake-secret-never-real"
	cloudInst = "i-fake0001"
	cloudType = "ecs.ebmgn8is.32xlarge"
)

func fakeCloud(t *testing.T) (*ecsfake.Server, *setup.ERICloud) {
	f := &ecsfake.Server{AccessKeyID: cloudAK, AccessKeySecret: cloudSK, AttachDescribes: 1,
		Types:     map[string]ecsfake.Type{cloudType: {ID: cloudType, EriQuantity: 2, Cards: []int{0, 1}, QPs: 8}},
		Instances: map[string]ecsfake.Instance{cloudInst: {Status: "Running", JumboFrame: true}}}
	f.AddENI(ecsfake.ENI{ID: "eni-primary", MAC: "00:16:3E:00:00:01", Type: "Primary", Mode: "Standard",
		IP: "10.0.1.2", Status: "InUse", InstanceID: cloudInst, VSwitchID: "vsw-fake", SecurityGroups: []string{"sg-fake"}})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cred, err := credentials.NewCredential(&credentials.Config{Type: tea.String("access_key"),
		AccessKeyId: tea.String(cloudAK), AccessKeySecret: tea.String(cloudSK)})
	require.NoError(t, err)
	c, err := eri.New(eri.Config{Region: "cn-hangzhou", Endpoint: srv.URL, Credential: cred, RetryBase: time.Millisecond, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return f, &setup.ERICloud{Client: c, Target: eri.Target{Region: "cn-hangzhou", InstanceID: cloudInst, InstanceType: cloudType},
		Attach: eri.AttachOptions{Wait: 5 * time.Second, Poll: time.Millisecond}}
}

// TestCloudStageThroughERI: setup's cloud stage is package eri's plan and
// apply against the fake ECS behind the official SDK: the dry run lists the
// calls and makes none; the run attaches two ERIs on distinct cards and
// lists the calls made; the instance's EnableJumboFrame reaches the doctor
// (the mtu check and the os stage); the rerun makes no changing call.
func TestCloudStageThroughERI(t *testing.T) {
	f, cloud := fakeCloud(t)
	dir := fixture.Host(t, "ebmgn8is-healthy")
	ctx := context.Background()
	opt := setup.Options{Root: dir, Only: []string{doctor.StageCloud}, Cloud: cloud, DryRun: true}
	res, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	st := stageOf(t, res, doctor.StageCloud)
	assert.Equal(t, setup.StatusPlanned, st.Status, "%+v", st)
	assert.NotEmpty(t, st.Changes)
	for _, c := range st.Changes {
		assert.Equal(t, setup.KindAPI, c.Kind)
		assert.False(t, c.Done)
	}
	assert.Zero(t, f.Count("CreateNetworkInterface")+f.Count("AttachNetworkInterface"), "the dry run made no changing call")
	require.NotNil(t, res.Doctor.Host.Instance.JumboFrames)
	assert.True(t, *res.Doctor.Host.Instance.JumboFrames, "EnableJumboFrame reached the doctor")

	opt.DryRun = false
	res, err = setup.Run(ctx, opt)
	require.NoError(t, err)
	st = stageOf(t, res, doctor.StageCloud)
	assert.Equal(t, setup.StatusChanged, st.Status, "%+v", st)
	assert.Equal(t, 2, f.Count("CreateNetworkInterface"))
	assert.Equal(t, 2, f.Count("AttachNetworkInterface"))
	for _, c := range st.Changes {
		assert.True(t, c.Done, c.Command)
	}
	assert.Contains(t, fmt.Sprint(st.Found), "2 ERI(s) attached now")

	res, err = setup.Run(ctx, opt)
	require.NoError(t, err)
	st = stageOf(t, res, doctor.StageCloud)
	assert.Equal(t, setup.StatusUnchanged, st.Status, "%+v", st)
	assert.Equal(t, 2, f.Count("CreateNetworkInterface"), "the rerun made no changing call")
	assert.Equal(t, 2, f.Count("AttachNetworkInterface"))
}

type noCreds struct{}

func (noCreds) Stage(context.Context, bool) (*doctor.Plan, *bool, error) {
	return nil, nil, eri.ErrNoCredentials
}

// TestCloudStageWithoutCredentialsIsSkipped: one line, and the host stages
// go on.
func TestCloudStageWithoutCredentialsIsSkipped(t *testing.T) {
	dir := fixture.Host(t, "ebmgn8is-healthy")
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageCloud, doctor.StageLimits}, Cloud: noCreds{}, DryRun: true})
	require.NoError(t, err)
	st := stageOf(t, res, doctor.StageCloud)
	assert.Equal(t, setup.StatusSkipped, st.Status)
	require.Len(t, st.Notes, 1)
	assert.Contains(t, st.Notes[0], "no Alibaba Cloud credentials")
	assert.Equal(t, setup.StatusPlanned, stageOf(t, res, doctor.StageLimits).Status)
}

// TestCloudStageWithoutDescribeInstanceAttribute: a RAM policy without
// ecs:DescribeInstanceAttribute leaves jumbo frames unknown, a note, not a
// failure: the ERIs are still planned and the later stages reached.
func TestCloudStageWithoutDescribeInstanceAttribute(t *testing.T) {
	f, cloud := fakeCloud(t)
	for range 8 {
		f.Fail("DescribeInstanceAttribute", ecsfake.Fault{Status: 403, Code: "Forbidden.RAM"})
	}
	dir := fixture.Host(t, "ebmgn8is-healthy")
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageCloud, doctor.StageLimits}, Cloud: cloud, DryRun: true})
	require.NoError(t, err)
	st := stageOf(t, res, doctor.StageCloud)
	assert.Equal(t, setup.StatusPlanned, st.Status, "%+v", st)
	assert.Contains(t, fmt.Sprint(st.Notes), "jumbo frames unknown")
	assert.NotEqual(t, setup.StatusNotReached, stageOf(t, res, doctor.StageLimits).Status)
	assert.NotEqual(t, "fail", string(res.Status), "a dry run with jumbo frames unknown does not fail")
}

// TestDoctorFixDoesOnlyWhatTheChecksNeed: doctor --fix on memlock-64k plans
// the limits files and no NCCL environment, and after writing them says
// what is left (log in again), not "edit limits.conf".
func TestDoctorFixDoesOnlyWhatTheChecksNeed(t *testing.T) {
	dir := fixture.Host(t, "memlock-64k")
	ctx := context.Background()
	opt := setup.Options{Root: dir, FailingOnly: true, DryRun: true}
	res, err := setup.Run(ctx, opt)
	require.NoError(t, err)
	for _, s := range res.Stages {
		for _, c := range s.Changes {
			assert.NotContains(t, c.Target, "nccl", "%s: %s", s.Name, c.Command)
		}
	}
	opt.DryRun = false
	res, err = setup.Run(ctx, opt)
	require.NoError(t, err)
	assert.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageLimits).Status)
	for _, l := range res.Left {
		if l.Check == "memlock" {
			assert.NotContains(t, l.Next, "limits.conf", l.Next)
			assert.Contains(t, l.Next, "log in again")
		}
	}
	_, err = os.Stat(filepath.Join(dir, setup.DefaultEnvFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "no NCCL environment written by doctor --fix")
}

// TestCloudChangesHaveRevertLines: each ENI created and attached gets its
// revert: detach (the instance stopped first) and delete.
func TestCloudChangesHaveRevertLines(t *testing.T) {
	_, cloud := fakeCloud(t)
	dir := fixture.Host(t, "ebmgn8is-healthy")
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageCloud}, Cloud: cloud})
	require.NoError(t, err)
	var detach, del int
	for _, r := range res.Reverts {
		if r.Stage != doctor.StageCloud {
			continue
		}
		switch {
		case strings.HasPrefix(r.Command, "aliyun ecs DetachNetworkInterface"):
			detach++
			assert.Contains(t, r.Command, "stop the instance first")
		case strings.HasPrefix(r.Command, "aliyun ecs DeleteNetworkInterface"):
			del++
		}
	}
	assert.Equal(t, 2, detach, "%+v", res.Reverts)
	assert.Equal(t, 2, del)
}

// TestApplyWithNamesWhatTheRootAllows: a dry run on an archive does not
// tell anyone to run setup as root; a directory root gets its --root.
func TestApplyWithNamesWhatTheRootAllows(t *testing.T) {
	res, err := setup.Run(context.Background(), setup.Options{Root: "../testdata/hosts/memlock-64k.tar.gz", Only: []string{doctor.StageLimits}, DryRun: true})
	require.NoError(t, err)
	assert.Contains(t, res.ApplyWith, "is an archive: nothing can be applied")
	assert.NotContains(t, res.ApplyWith, "as root")
	dir := fixture.Host(t, "memlock-64k")
	res, err = setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageLimits}, DryRun: true})
	require.NoError(t, err)
	assert.Contains(t, res.ApplyWith, "--root "+dir)
}

// TestOSStageBeforeTheERIsAreAttached: a dry run whose cloud stage will
// attach the ERIs plans the os stage as what they will get, not as a
// metadata failure.
func TestOSStageBeforeTheERIsAreAttached(t *testing.T) {
	_, cloud := fakeCloud(t)
	dir := fixture.Host(t, "ebmgn8is-healthy")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc/netplan"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/netplan/50-cloud-init.yaml"), []byte("network: {version: 2}\n"), 0o600))
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageCloud, doctor.StageOS}, Cloud: cloud, DryRun: true})
	require.NoError(t, err)
	st := stageOf(t, res, doctor.StageOS)
	assert.Equal(t, setup.StatusPlanned, st.Status, "%+v", st)
	assert.Empty(t, st.Error)
	assert.Contains(t, fmt.Sprint(st.Notes), "after the cloud stage: each new ERI's netdev")
	assert.Contains(t, fmt.Sprint(st.Notes), "/etc/netplan/60-erdmakit-DEV.yaml")
}

// TestHostileRecordedValues: a recorded host whose netdev is named
// e;touch${IFS}Z gets an ifcfg file that bash sources without running
// anything, and the revert lines are quoted; a MAC carrying $(...) stops the
// run before anything is planned (ErrInvalidValue, naming it).
func TestHostileRecordedValues(t *testing.T) {
	dir := fixture.Host(t, "ebmgn8is-healthy")
	nd := filepath.Join(dir, "erdmakit/netdevs.json")
	b, err := os.ReadFile(nd)
	require.NoError(t, err)
	const name = "e;touch${IFS}Z"
	require.NoError(t, os.WriteFile(nd, []byte(strings.Replace(string(b), `"name": "eth1"`, `"name": "e;touch${IFS}Z"`, 1)), 0o644))
	opt := setup.Options{Root: dir, Only: []string{doctor.StageOS}, Fix: doctor.FixEnv{Netdevs: []string{name}, NetworkStack: doctor.StackIfcfg,
		Metadata: &erdma.MetadataClient{BaseURL: "http://127.0.0.1:1"}}}
	res, err := setup.Run(context.Background(), opt)
	require.NoError(t, err)
	require.Equal(t, setup.StatusChanged, stageOf(t, res, doctor.StageOS).Status, "%+v", stageOf(t, res, doctor.StageOS))
	ifcfg := filepath.Join(dir, "etc/sysconfig/network-scripts/ifcfg-"+name)
	c, err := os.ReadFile(ifcfg)
	require.NoError(t, err)
	assert.Contains(t, string(c), "DEVICE='e;touch${IFS}Z'\n")
	work := t.TempDir()
	cmd := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", `. "$1"; printf %s "$DEVICE"`, "x", ifcfg)
	cmd.Dir, cmd.Env = work, []string{}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, name, string(out))
	ents, _ := os.ReadDir(work)
	assert.Empty(t, ents, "sourcing the file created nothing")
	for _, r := range res.Reverts {
		assert.Contains(t, r.Command, "'", "quoted: %s", r.Command)
	}

	require.NoError(t, os.WriteFile(nd, []byte(strings.Replace(string(b), `"mac": "00:16:3e:2f:37:75"`, `"mac": "00:16:3e:2f:37:75$(touch /tmp/pwned)"`, 1)), 0o644))
	opt.Fix.Netdevs = []string{"eth1"}
	_, err = setup.Run(context.Background(), opt)
	require.ErrorIs(t, err, doctor.ErrInvalidValue)
	assert.Contains(t, err.Error(), "$(touch /tmp/pwned)")
}

// TestRootWithEtcLinkedOut: with DIR/etc a symlink to a directory outside
// DIR, setup --root DIR writes nothing there (netplan, limits.d,
// system.conf.d): every file is refused at the link.
func TestRootWithEtcLinkedOut(t *testing.T) {
	dir := fixture.Host(t, "memlock-64k")
	elsewhere := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "etc/netplan"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "etc/netplan/50-cloud-init.yaml"), []byte("network: {version: 2}\n"), 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "etc")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "etc"), filepath.Join(dir, "etc")))
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageLimits}, Fix: doctor.FixEnv{NetworkStack: doctor.StackNetplan}})
	require.NoError(t, err)
	assert.Equal(t, setup.StatusFailed, stageOf(t, res, doctor.StageLimits).Status)
	var found []string
	require.NoError(t, filepath.WalkDir(elsewhere, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, p)
		}
		return err
	}))
	assert.Equal(t, []string{filepath.Join(elsewhere, "etc/netplan/50-cloud-init.yaml")}, found, "nothing written outside the root")
}

// TestNetworkdCatchAllBlocksTheStage: a .network file that sorts before
// erdmakit's and matches every link blocks the os stage, naming the file.
func TestNetworkdCatchAllBlocksTheStage(t *testing.T) {
	dir := fixture.Host(t, "ebmgn8is-healthy")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc/systemd/network"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/systemd/network/00-all.network"), []byte("[Network]\nDHCP=yes\n"), 0o644))
	res, err := setup.Run(context.Background(), setup.Options{Root: dir, Only: []string{doctor.StageOS}, DryRun: true,
		Fix: doctor.FixEnv{Netdevs: []string{"eth1"}, NetworkStack: doctor.StackNetworkd, Metadata: &erdma.MetadataClient{BaseURL: "http://127.0.0.1:1"}}})
	require.NoError(t, err)
	st := stageOf(t, res, doctor.StageOS)
	assert.Equal(t, setup.StatusBlocked, st.Status, "%+v", st)
	assert.Contains(t, st.Blocked, "/etc/systemd/network/00-all.network")
	assert.Contains(t, st.Blocked, "no [Match]")
}

// TestInterruptedCloudStageNamesItsENIs: Ctrl-C during the attach wait
// ends the run with an error that names the ENIs this run created.
func TestInterruptedCloudStageNamesItsENIs(t *testing.T) {
	f, cloud := fakeCloud(t)
	f.AttachDescribes = 1000 // the ENIs stay Attaching: the wait goes on
	cloud.Attach.Poll = 10 * time.Millisecond
	dir := fixture.Host(t, "ebmgn8is-healthy")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cloud.Attach.Progress = func(s string) {
		if strings.HasPrefix(s, "attaching") {
			time.AfterFunc(50*time.Millisecond, cancel)
		}
	}
	_, err := setup.Run(ctx, setup.Options{Root: dir, Only: []string{doctor.StageCloud}, Cloud: cloud})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "this run created eni-")
}

// Package slurmtest starts a private single-node Slurm (munged, slurmctld,
// slurmd) for tests that run real srun. It needs root and the Debian
// packages slurmctld, slurmd, slurm-client and munge (.ci/deps.sh); without
// them a test skips, or fails under CI=true.
package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/erdmakit/erdmakit/internal/fixture"
)

// needOrFail skips the test, or fails it under CI=true, where CI must have
// what it needs (.ci/deps.sh installs Slurm and munge).
func needOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// daemon starts argv in its own process group; cleanup kills the group
// (slurmd's slurmstepd children with it) and waits.
func daemon(t testing.TB, dir, name string, argv ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	require.NoError(t, err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		needOrFail(t, "starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
}

// Start runs a single-node Slurm (munged, slurmctld, slurmd; node
// "localhost", no cgroups) from a temporary directory, as root, and returns
// the SLURM_CONF path; everything is stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		needOrFail(t, "a private Slurm needs root")
	}
	var bins = map[string]string{}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "srun", "sinfo"} {
		p, err := exec.LookPath(b)
		if err != nil {
			for _, d := range []string{"/usr/sbin/", "/usr/bin/"} {
				if _, serr := os.Stat(d + b); serr == nil {
					p, err = d+b, nil
				}
			}
		}
		if err != nil {
			needOrFail(t, "%s not installed (Debian slurmctld slurmd slurm-client munge): %v", b, err)
		}
		bins[b] = p
	}
	// A short path: munge's socket path must fit in sun_path.
	dir, err := os.MkdirTemp("", "erdmakit-slurm")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o700))
	for _, d := range []string{"spool", "state"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o700))
	}
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	require.NoError(t, err)
	_, err = f.Read(key)
	f.Close()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600))
	sock := filepath.Join(dir, "munge.sock")
	daemon(t, dir, "munged", bins["munged"], "-F", "-f", "--key-file="+filepath.Join(dir, "munge.key"),
		"--socket="+sock, "--pid-file="+filepath.Join(dir, "munged.pid"),
		"--log-file="+filepath.Join(dir, "munged.file.log"), "--seed-file="+filepath.Join(dir, "munge.seed"))
	conf := filepath.Join(dir, "slurm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`ClusterName=erdmakit
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeHostname=localhost CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
`, fixture.FreePort(t), fixture.FreePort(t), sock, dir, dir, dir, dir)), 0o644))
	t.Setenv("SLURM_CONF", conf)
	// Wait for munged's socket before the daemons need it.
	waitFor(t, 10*time.Second, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	daemon(t, dir, "slurmctld", bins["slurmctld"], "-D", "-i", "-f", conf)
	daemon(t, dir, "slurmd", bins["slurmd"], "-D", "-N", "localhost", "-f", conf)
	waitFor(t, 30*time.Second, "the Slurm node idle", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, _ := exec.CommandContext(ctx, bins["sinfo"], "-h", "-o", "%T").Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return conf
}

func waitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			needOrFail(t, "waiting for %s: not ready after %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SrunMPIWorks reports whether srun on the Slurm Start began runs a task
// with --mpi=mpi (Slurm's pmix plugin, for one, loads libpmix.so at run
// time: Debian's libpmix-dev provides it, libpmix2 alone does not), and
// srun's output when it does not. It asks srun itself, so that a test can
// expect what this machine has.
func SrunMPIWorks(t testing.TB, mpi string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "srun", "--mpi="+mpi, "-N1", "-n1", "true").CombinedOutput()
	if ctx.Err() != nil {
		needOrFail(t, "srun --mpi=%s true did not end within a minute: %s", mpi, out)
	}
	return err == nil, string(out)
}

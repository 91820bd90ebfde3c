package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeQemuEnv names the directory in which the test binary, run as qemu,
// counts its boots; fakeQemuMode says how the lab link behaves.
const (
	fakeQemuEnv  = "ERDMAKIT_FAKE_QEMU"
	fakeQemuMode = "ERDMAKIT_FAKE_QEMU_MODE" // "flaky": dead on the first boot only; "dead": always
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(fakeQemuEnv); dir != "" {
		os.Exit(fakeQemu(dir, os.Getenv(fakeQemuMode), os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeQemu plays a VM for the runner: it binds its end of the UDP socket
// netdev and meets its peer there (b sends until a answers), prints the
// markers a guest prints and, when the link is to be dead, prints NOLINK
// and hangs as a real guest's peer would.
func fakeQemu(dir, mode string, args []string) int {
	role, local, remote := "", "", ""
	for _, a := range args {
		for _, kv := range strings.Split(a, ",") {
			if v, ok := strings.CutPrefix(kv, "localaddr="); ok {
				local = v
			}
			if v, ok := strings.CutPrefix(kv, "udp="); ok {
				remote = v
			}
			switch kv {
			case "mac=" + MACA:
				role = "a"
			case "mac=" + MACB:
				role = "b"
			}
		}
	}
	if role == "" || local == "" || remote == "" {
		fmt.Fprintln(os.Stderr, "fake qemu: no UDP socket netdev in", args)
		return 1
	}
	// Count this boot before meeting the peer: once a has met b, a may end
	// the run, and the runner then stops b at once.
	f, err := os.OpenFile(filepath.Join(dir, "boots-"+role), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 1
	}
	fmt.Fprintln(f, "boot")
	f.Close()
	b, _ := os.ReadFile(filepath.Join(dir, "boots-"+role))
	boots := bytes.Count(b, []byte("\n"))
	if err := meetPeer(role, local, remote); err != nil {
		fmt.Fprintln(os.Stderr, "fake qemu:", err)
		return 1
	}
	fmt.Println(MarkerPrefix + "READY")
	if mode == "dead" || (mode == "flaky" && boots == 1) {
		if role == "a" {
			fmt.Println(MarkerPrefix + MarkerNoLink + " peer=" + IPB + " tries=30")
		}
		time.Sleep(time.Minute) // the runner must stop us
		return 0
	}
	fmt.Println(MarkerPrefix + "LINK peer=x tries=1")
	fmt.Println(MarkerPrefix + "EXIT 0")
	return 0
}

// meetPeer exchanges one datagram with the peer: b says hello until a
// answers it.
func meetPeer(role, local, remote string) error {
	c, err := net.ListenPacket("udp", local)
	if err != nil {
		return err
	}
	defer c.Close()
	to, err := net.ResolveUDPAddr("udp", remote)
	if err != nil {
		return err
	}
	buf := make([]byte, 16)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if role == "b" {
			if _, err := c.WriteTo([]byte("hello"), to); err != nil {
				return err
			}
		}
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, from, err := c.ReadFrom(buf); err == nil {
			if role == "a" {
				_, err = c.WriteTo([]byte("hello"), from)
			}
			return err
		}
	}
	return errors.New("the peer never answered")
}

func bootPairWithFakeQemu(t *testing.T, mode string) ([]*Boot, string, time.Duration, error) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(fakeQemuEnv, dir)
	t.Setenv(fakeQemuMode, mode)
	exe, err := os.Executable()
	require.NoError(t, err)
	var progress strings.Builder
	o := &Options{ModuleRoot: dir, Progress: &progress, Timeout: 20 * time.Second}
	env := &Env{WorkDir: dir, Qemu: exe}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	boots, err := o.bootPair(ctx, env, nil, nil)
	return boots, progress.String(), time.Since(start), err
}

func countBoots(t *testing.T, role string) int {
	b, err := os.ReadFile(filepath.Join(os.Getenv(fakeQemuEnv), "boots-"+role))
	require.NoError(t, err)
	return bytes.Count(b, []byte("\n"))
}

func TestBootPairRebootsADeadLinkOnce(t *testing.T) {
	boots, progress, took, err := bootPairWithFakeQemu(t, "flaky")
	require.NoError(t, err, progress)
	require.Len(t, boots, 2)
	for _, b := range boots {
		assert.Equal(t, 0, b.ExitCode, b.Name)
		_, ok := b.Marker("LINK")
		assert.True(t, ok, b.Name)
	}
	assert.Equal(t, 2, countBoots(t, "a"))
	assert.Equal(t, 2, countBoots(t, "b"))
	assert.Contains(t, progress, "its peer never answered")
	assert.Contains(t, progress, "booting the pair again")
	assert.Less(t, took, 30*time.Second, "the dead pair must be stopped at once, not at its timeout")
}

func TestBootPairGivesUpAfterTwoDeadLinks(t *testing.T) {
	_, progress, took, err := bootPairWithFakeQemu(t, "dead")
	require.ErrorIs(t, err, ErrNoLink, progress)
	assert.Contains(t, err.Error(), "10.0.9.1 and 10.0.9.2 over UDP 127.0.0.1:")
	assert.Equal(t, 2, countBoots(t, "a"))
	assert.Equal(t, 2, countBoots(t, "b"))
	assert.Less(t, took, 30*time.Second)
}

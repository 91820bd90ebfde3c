package kubelab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// Missing says what this machine lacks to run the lab with the binaries
// in cache (nil when nothing): root, the built binaries
// (tools/kubelab/build.sh), containerd and runc (apt: containerd, runc),
// the CNI loopback plugin (containernetworking-plugins), go (the lab builds
// its sandbox image and CNI plugin from this module).
func Missing(cache string) error {
	var miss []string
	if os.Geteuid() != 0 {
		miss = append(miss, "root")
	}
	var bins []string
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(cache, "bin", b)); err != nil {
			bins = append(bins, b)
		}
	}
	if len(bins) > 0 {
		miss = append(miss, fmt.Sprintf("%s in %s (tools/kubelab/build.sh)", strings.Join(bins, ", "), filepath.Join(cache, "bin")))
	}
	var progs []string
	for _, p := range append(append([]string(nil), HostPrograms...), "go") {
		if _, err := exec.LookPath(p); err != nil {
			progs = append(progs, p)
		}
	}
	found := false
	for _, lo := range loopbackPlugins {
		if _, err := os.Stat(lo); err == nil {
			found = true
		}
	}
	if !found {
		progs = append(progs, "the CNI loopback plugin (containernetworking-plugins)")
	}
	if len(progs) > 0 {
		miss = append(miss, strings.Join(progs, ", ")+" (.ci/deps.sh test)")
	}
	if len(miss) > 0 {
		return fmt.Errorf("kubelab: missing %s; make kube-lab-deps builds and installs them", strings.Join(miss, "; "))
	}
	return nil
}

// Need fails the test under CI=true, and skips it otherwise, when this
// machine cannot run the lab (Missing).
func Need(t testing.TB) {
	t.Helper()
	if err := Missing(DefaultCache()); err != nil {
		needFail(t, err)
	}
}

func needFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true: the Kubernetes lab must run)", err)
	}
	t.Skip(err)
}

// ErdmakitArchive is the erdmakit image archive tools/kubelab/image.sh
// writes (the release binary on the release image's Debian base, imported
// as ErdmakitImage): $KUBELAB_ERDMAKIT_IMAGE, else
// bin/kubelab/erdmakit-image.tar at the module's root. Missing, the test
// fails under CI=true and is skipped otherwise.
func ErdmakitArchive(t testing.TB) string {
	t.Helper()
	p := os.Getenv("KUBELAB_ERDMAKIT_IMAGE")
	if p == "" {
		root, err := moduleRoot()
		if err != nil {
			needFail(t, err)
		}
		p = filepath.Join(root, "bin", "kubelab", "erdmakit-image.tar")
	}
	if _, err := os.Stat(p); err != nil {
		needFail(t, fmt.Errorf("kubelab: no erdmakit image archive %s (tools/kubelab/image.sh, run by make kube-lab)", p))
	}
	return p
}

// NewTest is Need, then Start with o.Dir a short scratch directory of the
// test's (unless given), and Close at the test's end (its error fails the
// test). The processes' logs are printed when the test failed.
func NewTest(t testing.TB, o Options) *Cluster {
	t.Helper()
	Need(t)
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "kubelab")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(d); err != nil {
				t.Errorf("kubelab: removing %s: %v", d, err)
			}
		})
		o.Dir = d
	}
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []string{"kubelet", "containerd", "kube-apiserver", "kwok"} {
				t.Logf("kubelab: the end of %s's log:\n%s", p, c.LogTail(p, 20))
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("kubelab: %v", err)
		}
	})
	return c
}

func moduleRoot() (string, error) {
	out, err := execx.Output(context.Background(), "go", "env", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("kubelab: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("kubelab: not inside the erdmakit module")
	}
	return filepath.Dir(mod), nil
}

// Command kubelab-image writes the Kubernetes lab's erdmakit image archive
// (kubelab.WriteImage): the release image's Debian base (tools/release/base.sh)
// with the release binary at /usr/bin/erdmakit on top, named
// kubelab.ErdmakitImage, in Docker's archive format for `ctr images import`.
// The same two layers as `make release-image`'s image, packed without podman
// (seconds, not minutes: the base is not copied through a vfs store).
//
//	kubelab-image -base BASE.tar -binary bin/release-binary/erdmakit -o bin/kubelab/erdmakit-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/kubelab"
)

type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q: want KEY=VALUE", s)
	}
	l[k] = v
	return nil
}

func main() {
	base := flag.String("base", "", "the base root filesystem tar (tools/release/base.sh)")
	binary := flag.String("binary", "", "the erdmakit binary for /usr/bin/erdmakit")
	out := flag.String("o", "", "the archive to write")
	ref := flag.String("ref", kubelab.ErdmakitImage, "the image's name:tag")
	epoch := flag.Int64("epoch", 0, "the image's time (Unix seconds; SOURCE_DATE_EPOCH)")
	lbl := labels{}
	flag.Var(lbl, "label", "KEY=VALUE, an image label (repeatable)")
	flag.Parse()
	if *base == "" || *binary == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kubelab-image -base BASE.tar -binary ERDMAKIT -o ARCHIVE [-ref NAME:TAG] [-epoch SECONDS] [-label K=V]...")
		os.Exit(2)
	}
	err := kubelab.WriteImage(*out, kubelab.Image{
		Ref:     *ref,
		Layers:  []string{*base},
		Files:   map[string]string{"usr/bin/erdmakit": *binary},
		Cmd:     []string{"erdmakit", "doctor"},
		Labels:  lbl,
		Created: time.Unix(*epoch, 0),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelab-image:", err)
		os.Exit(1)
	}
}

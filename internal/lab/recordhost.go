package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
	"github.com/erdmakit/erdmakit/internal/fixture"
)

// RecordHost boots the one-VM lab, runs cmd/labrecord in it and copies the
// recorded tree to dst (which is replaced): a directory, or a .tar.gz packed
// the way the committed fixtures are (testdata/hosts/lab-rxe.tar.gz).
func RecordHost(ctx context.Context, o Options, dst string) error {
	env, err := Prepare(ctx, &o)
	if err != nil {
		return err
	}
	bin := filepath.Join(env.WorkDir, "bin", "labrecord")
	cmd := execx.Command(ctx, "go", "build", "-o", bin, "./internal/lab/cmd/labrecord")
	cmd.Dir = o.ModuleRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build labrecord: %w: %s", err, b)
	}
	guestOut := GuestLab + "/out/" + RoleSingleName + "/record.tar"
	steps := []Step{{ID: "record", Argv: []string{GuestLab + "/bin/labrecord", "-out", guestOut}, Timeout: 2 * time.Minute}}
	boots, err := o.boot(ctx, env, []Guest{o.guest(RoleSingleName, IPA, "")}, [][]Step{steps})
	if err != nil {
		return err
	}
	for _, m := range boots[0].Markers {
		if m.Word == "END" && len(m.Args) > 1 && m.Args[1] != "0" {
			return fmt.Errorf("labrecord exited %s in the guest (console: %s)", m.Args[1], tail(boots[0].Console, 8))
		}
	}
	f, err := os.Open(filepath.Join(env.WorkDir, "out", RoleSingleName, "record.tar"))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	if strings.HasSuffix(dst, ".tar.gz") {
		tree := filepath.Join(env.WorkDir, "out", RoleSingleName, "tree")
		if err := ExtractTreeTar(f, tree); err != nil {
			return err
		}
		return fixture.Pack(tree, dst)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return ExtractTreeTar(f, dst)
}

package lab

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/erdmakit/erdmakit/internal/execx"
)

// RecordHost boots the one-VM lab, runs cmd/labrecord in it and copies the
// recorded tree to dst (which is replaced).
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
	guestOut := GuestLab + "/out/" + RoleSingleName + "/record"
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
	src := filepath.Join(env.WorkDir, "out", RoleSingleName, "record")
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return CopyTree(src, dst)
}

// CopyTree copies a directory tree, symlinks as symlinks.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(t, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
}

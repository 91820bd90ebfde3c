//go:build unix

package execx

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// group starts cmd in a process group of its own and makes cancelling end
// the whole group: SIGTERM, then SIGKILL after Grace.
func group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		go func() {
			time.Sleep(Grace)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}()
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
}

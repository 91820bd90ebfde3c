// Command kubelab-pause is the Kubernetes lab's sandbox ("pause") image's
// only program: it holds a pod's namespaces open, reaps the zombies of a
// shared PID namespace and exits on SIGINT or SIGTERM, like the pause
// container Kubernetes ships (which no registry can serve here). Built
// static (CGO_ENABLED=0) by package kubelab and packed into an image of one
// file.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

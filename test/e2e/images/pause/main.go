// Command pause is the pod sandbox's process of the e2e node (test/e2e/cluster/node,
// Options.Node): the image containerd's CRI plugin runs first in every pod to
// hold its namespaces, built here because no registry can be reached. Like
// Kubernetes' own pause (build/pause/linux/pause.c) it sleeps, reaps orphaned
// children (it is PID 1 of a pod that shares its process namespace) and exits
// on SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

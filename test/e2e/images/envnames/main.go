// Command envnames is the workload of the node e2e tests (test/e2e/node): a
// static binary that reports which environment variables and which files it
// sees — names only, never a value — so a test can observe what the real
// kubelet delivered to a container (an optional secretKeyRef to a missing key
// leaves the variable unset; a secret volume is refreshed, a subPath mount and
// the environment are not).
//
// Usage: envnames [DIR...]. Every second it lists the names of its environment
// variables and of the entries of each DIR, and prints one JSON line when the
// listing differs from the last one printed:
//
//	{"env":["HOME","TOKEN"],"dirs":{"/etc/app":["token","user"]}}
//
// A DIR that cannot be read is listed with its error ("error" instead of the
// names).
package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Report is one printed line.
type Report struct {
	Env    []string            `json:"env"`
	Dirs   map[string][]string `json:"dirs,omitempty"`
	Errors map[string]string   `json:"errors,omitempty"`
}

func main() {
	dirs := os.Args[1:]
	// PID 1 of its container: without a handler SIGTERM would be ignored
	// until the kubelet's grace period ends.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		os.Exit(0)
	}()
	var last []byte
	for {
		b, _ := json.Marshal(look(dirs))
		if string(b) != string(last) {
			os.Stdout.Write(append(b, '\n'))
			last = b
		}
		time.Sleep(time.Second)
	}
}

func look(dirs []string) Report {
	r := Report{Env: []string{}}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		r.Env = append(r.Env, name)
	}
	slices.Sort(r.Env)
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			if r.Errors == nil {
				r.Errors = map[string]string{}
			}
			r.Errors[d] = err.Error()
			continue
		}
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if r.Dirs == nil {
			r.Dirs = map[string][]string{}
		}
		r.Dirs[d] = names
	}
	return r
}

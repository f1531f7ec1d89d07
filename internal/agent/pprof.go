package agent

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
)

// CheckPprofAddr accepts a loopback address only for --debug-pprof: profiles
// show the process's memory layout and goroutine stacks (never a Secret value,
// which the agent does not keep, but nothing for a pod IP either).
func CheckPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-pprof %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--debug-pprof %q: only a loopback address is allowed", addr)
	}
	return nil
}

// pprofHandler serves net/http/pprof under /debug/pprof/.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

package main

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiserverStats is what the kube-apiserver's own /metrics says about its
// cost: its CPU (process_cpu_seconds_total) and the watches it serves.
type apiserverStats struct {
	cpu float64
	// watches: apiserver_longrunning_requests{verb="WATCH"} summed (every
	// open watch, from any client); registered: apiserver_registered_watchers
	// summed, when this version still exports it (-1 otherwise).
	watches, registered float64
}

// readAPIServer reads the apiserver's /metrics with the admin client.
func readAPIServer(ctx context.Context, cs kubernetes.Interface) (apiserverStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiserverStats{}, err
	}
	st := apiserverStats{registered: -1}
	st.cpu, _ = metricValue(body, "process_cpu_seconds_total")
	for _, line := range bytes.Split(body, []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("apiserver_longrunning_requests{")) && bytes.Contains(line, []byte(`verb="WATCH"`)):
			st.watches += lastFloat(line)
		case bytes.HasPrefix(line, []byte("apiserver_registered_watchers{")):
			if st.registered < 0 {
				st.registered = 0
			}
			st.registered += lastFloat(line)
		}
	}
	return st, nil
}

func lastFloat(line []byte) float64 {
	i := bytes.LastIndexByte(line, ' ')
	if i < 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(string(bytes.TrimSpace(line[i+1:])), 64)
	return v
}

// Command generate writes driftwatch's Grafana dashboards: dashboards/*.json and
// the copies the Helm chart ships (deploy/chart/driftwatch/dashboards/). Run it
// from the dashboards module: `go generate ./...` or `go run ./cmd/generate`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/driftwatch/driftwatch/dashboards"
)

func main() {
	out := flag.String("out", ".", "folder for the dashboard JSON files")
	chart := flag.String("chart", "../deploy/chart/driftwatch/dashboards", "chart folder for the copies (empty: none)")
	flag.Parse()
	files, err := dashboards.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, dir := range []string{*out, *chart} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, f := range files {
			p := filepath.Join(dir, f.Name)
			if err := os.WriteFile(p, f.JSON, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println("wrote", p)
		}
	}
}

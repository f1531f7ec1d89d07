package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/driftwatch/driftwatch/alerts"
)

const rulesUsage = `usage: agent rules [--job NAME] [--runbook-base-url URL] [--cluster-label LABEL] [--keep-firing-for DURATION]

Prints driftwatch's Prometheus alerting rules (alerts/driftwatch.rules.yaml, built
into the binary) for this installation: the job label of the scrape, where the
runbooks live, and the label that names a cluster when several clusters' agents
are queried together (Thanos, Mimir, federation): every aggregation keeps it, so
the same namespace and Secret in two clusters are two alerts; and how long a
firing finding alert stays firing after its series vanish, so that an agent
restart does not resolve a page and page again. The Helm chart's
PrometheusRule makes the same substitutions (metrics.job,
prometheusRule.runbookBaseURL, prometheusRule.clusterLabel,
prometheusRule.keepFiringFor).

`

// Rules runs `agent rules`.
func Rules(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, rulesUsage)
		fs.PrintDefaults()
	}
	job := fs.String("job", "driftwatch", "the Prometheus job label of driftwatch's scrape")
	base := fs.String("runbook-base-url", alerts.RunbookBase, "base URL of the runbooks; each alert links <base>/<AlertName>.md")
	cluster := fs.String("cluster-label", alerts.ClusterLabel, "the label naming a cluster in a fleet (an external or target label); kept in every aggregation")
	keep := fs.String("keep-firing-for", alerts.KeepFiringFor, "how long a firing finding alert stays firing after its series vanish (an agent restart); 0s turns it off")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent rules: unexpected argument %q\n", fs.Arg(0))
		return ExitError
	}
	b, err := alerts.Render(alerts.RenderOptions{Job: *job, RunbookBaseURL: *base, ClusterLabel: *cluster, KeepFiringFor: *keep})
	if err != nil {
		fmt.Fprintln(stderr, "agent rules:", err)
		return ExitError
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintln(stderr, "agent rules:", err)
		return ExitError
	}
	return ExitOK
}

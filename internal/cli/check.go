package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/driftwatch/driftwatch/alerts"
	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/ui"
)

// Severity of a finding: the severity its family declares in the catalog
// (finding.Catalog), the same the alert rules carry.
type Severity = finding.Severity

// Severities, in decreasing order.
const (
	SevCritical = finding.SevCritical
	SevWarning  = finding.SevWarning
	SevInfo     = finding.SevInfo
)

// Finding is one finding of `agent check --output json` (and of
// /api/v1/findings): finding.Finding, the one schema docs/findings-schema.md
// documents.
type Finding = finding.Finding

func objectOf(f Finding) string { return f.Object.String() }

// details lists the labels that do not name the object.
func details(f Finding) string {
	skip := map[string]bool{"namespace": true}
	for k, v := range f.Labels {
		if v == f.Object.Name && (k == "secret" || k == "externalsecret" || k == "serviceaccount" || k == "store" ||
			k == "application" || k == "name") {
			skip[k] = true
		}
	}
	var ks []string
	for k, v := range f.Labels {
		if !skip[k] && v != "" {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	parts := make([]string, 0, len(ks)+1)
	for _, k := range ks {
		parts = append(parts, k+"="+f.Labels[k])
	}
	if f.Value != 1 {
		parts = append(parts, "value="+strconv.FormatFloat(f.Value, 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// CheckReport is the --output json document (report.Report).
type CheckReport = report.Report

func writeCheckText(w io.Writer, r CheckReport) error {
	var b strings.Builder
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	}
	var classes []string
	byClass := map[string][]Finding{}
	for _, f := range r.Findings {
		if _, ok := byClass[f.Class]; !ok {
			classes = append(classes, f.Class)
		}
		byClass[f.Class] = append(byClass[f.Class], f)
	}
	for i, c := range classes {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s (%d)\n", strings.ToUpper(c), len(byClass[c]))
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SEVERITY\tFINDING\tOBJECT\tDETAILS")
		for _, f := range byClass[c] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Severity, strings.TrimPrefix(f.Metric, "driftwatch_"), objectOf(f), details(f))
			// What the detector saw and who reads the object, under OBJECT.
			if f.Evidence != "" {
				fmt.Fprintf(tw, "  \t\t%s\n", f.Evidence)
			}
			if len(f.Consumers) > 0 {
				var rs []string
				for _, c := range f.Consumers {
					rs = append(rs, fmt.Sprintf("%s/%s (%d pods)", c.Kind, c.Name, c.Pods))
				}
				fmt.Fprintf(tw, "  \t\tread by: %s\n", strings.Join(rs, ", "))
			}
			if a := ui.RunbookAlert(f); a != "" {
				fmt.Fprintf(tw, "  \t\trunbook: %s%s.md\n", alerts.RunbookBase, a)
			}
		}
		_ = tw.Flush()
	}
	b.WriteByte('\n')
	if len(r.Unavailable) > 0 {
		fmt.Fprintf(&b, "Not checked (unavailable): %s\n", strings.Join(r.Unavailable, ", "))
	}
	if len(r.SkippedDetectors) > 0 {
		fmt.Fprintf(&b, "Detectors skipped: %s\n", strings.Join(r.SkippedDetectors, ", "))
	}
	if len(r.FailedDetectors) > 0 {
		fmt.Fprintf(&b, "Detectors FAILED (their findings are missing): %s\n", strings.Join(r.FailedDetectors, ", "))
	}
	fmt.Fprintf(&b, "%s: %d critical, %d warning, %d info (fail on %s and above)\n",
		strings.ToUpper(r.Result), r.Counts["critical"], r.Counts["warning"], r.Counts["info"], r.FailOn)
	var trimmed strings.Builder
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		trimmed.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			trimmed.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, trimmed.String())
	return err
}

const checkUsage = `usage: agent check [--kubeconfig K] [--context C] [--output text|json] [--fail-on critical|warning|info] [--timeout 2m]

Runs every detector once against the current cluster (after the informers sync)
and prints the findings grouped by failure class.
Exit status: 0 no finding at or above --fail-on, 1 otherwise, 2 on errors
(including a detector that failed: its findings would be missing).

`

// checkBeforeDetector is the findings' BeforeDetector (tests inject a failing
// detector with it).
var checkBeforeDetector func(string)

// Check runs `agent check` with the default connection.
func Check(args []string, stdout, stderr io.Writer) int {
	return CheckWith(args, stdout, stderr, DefaultConnect)
}

// CheckWith runs `agent check` with the given connection (tests inject fake
// clients; a nil Dynamic or Discovery client disables the ESO and Argo CD
// detectors).
func CheckWith(args []string, stdout, stderr io.Writer, connect Connect) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, checkUsage)
		fs.PrintDefaults()
	}
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)")
	kctx := fs.String("context", "", "kubeconfig context to use")
	output := fs.String("output", "text", "output format: text or json")
	failOn := fs.String("fail-on", "warning", "exit 1 when a finding of this severity or higher exists: critical, warning or info (each finding family declares its severity; the alert rules carry the same)")
	timeout := fs.Duration("timeout", 2*time.Minute, "time limit for the informers to sync")
	namespaces := fs.String("namespaces", "", "comma-separated namespaces to check (default: all)")
	excludeNS := fs.String("exclude-namespaces", "", "comma-separated namespaces to ignore")
	esoSA := fs.String("eso-service-account", "", "NAMESPACE/NAME of the ESO controller's ServiceAccount, which ambient store auth runs as (default external-secrets/external-secrets)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agent check: unexpected argument %q\n", pos[0])
		return ExitError
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "agent check: --output %q: want text or json\n", *output)
		return ExitError
	}
	var threshold Severity
	switch *failOn {
	case "warning":
		threshold = SevWarning
	case "critical":
		threshold = SevCritical
	case "info":
		threshold = SevInfo
	default:
		fmt.Fprintf(stderr, "agent check: --fail-on %q: want critical, warning or info\n", *failOn)
		return ExitError
	}
	findingsCfg := dwcollectors.Config{BeforeDetector: checkBeforeDetector}
	if *esoSA != "" {
		ns, name, ok := splitRef(*esoSA)
		if !ok {
			fmt.Fprintf(stderr, "agent check: --eso-service-account %q: want NAMESPACE/NAME\n", *esoSA)
			return ExitError
		}
		findingsCfg.ESOServiceAccount = model.Ref{Namespace: ns, Name: name}
	}
	clients, err := connect(*kubeconfig, *kctx)
	if err != nil {
		fmt.Fprintln(stderr, "agent check:", err)
		return ExitError
	}
	if clients.Core == nil {
		fmt.Fprintln(stderr, "agent check: no Kubernetes client")
		return ExitError
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := agent.Config{
		Namespaces:        agent.SplitList(*namespaces),
		ExcludeNamespaces: agent.SplitList(*excludeNS),
		DiscoveryInterval: time.Hour, // one pass: discovery runs once at start
		Logger:            log,
		Findings:          findingsCfg,
	}
	a := agent.New(clients, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	deadline := time.NewTimer(*timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !a.Manager.Ready() {
		select {
		case <-deadline.C:
			fmt.Fprintf(stderr, "agent check: informers did not sync within %s: %s\n", *timeout, strings.Join(a.Manager.Waiting(), ","))
			return ExitError
		case <-tick.C:
		}
	}
	ev := a.Findings.Run()
	r := report.Build(ev.Findings, ev.Failed, a.Findings.Skipped(), a.Manager.States(), threshold, nil)
	failed := r.Failed()
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = writeCheckText(stdout, r)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agent check: cannot write the result:", err)
		return ExitError
	}
	if r.Incomplete() {
		fmt.Fprintf(stderr, "agent check: detector(s) failed, their findings are missing: %s\n", strings.Join(r.FailedDetectors, ", "))
		return ExitError
	}
	if failed {
		return ExitFinding
	}
	return ExitOK
}

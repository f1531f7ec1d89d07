package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/driftwatch/driftwatch/internal/flux/desired"
	"github.com/driftwatch/driftwatch/internal/lint"
)

const lintUsage = `usage: agent lint [flags] [-f PATH]... [PATH]... [-]

Checks rendered Kubernetes manifests offline (no cluster, no kubeconfig) with the
detectors the exporter runs: keys workloads read that the rendering's Secrets and
ExternalSecrets do not provide, ExternalSecrets without an explicit
creationPolicy, Secret manifests carrying values, Argo CD ignoreDifferences traps,
and more (--rules lists them). PATH is a file, a directory (its .yaml, .yml and
.json files, recursively) or - for standard input:

    helm template my-release ./chart | agent lint -
    kustomize build overlays/prod | agent lint --output sarif - > lint.sarif

Secret values are fingerprinted and dropped as they are read; no output carries
one. Exit status: 0 no finding at or above --fail-on, 1 otherwise, 2 when some
input could not be checked (a file that cannot be read, a document that does not
parse) or on usage errors; the readable documents are checked and reported either
way.

`

type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error { *p = append(*p, v); return nil }

// Lint runs `agent lint`. version names the tool in SARIF output.
func Lint(args []string, stdin io.Reader, stdout, stderr io.Writer, version string) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, lintUsage)
		fs.PrintDefaults()
	}
	var paths pathList
	fs.Var(&paths, "f", "a file, directory or - (stdin) to check; repeatable (positional arguments work too)")
	fs.Var(&paths, "filename", "same as -f")
	output := fs.String("output", "text", "output format: text, json or sarif")
	failOn := fs.String("fail-on", "warning", "exit 1 when a finding of this severity or higher exists: critical, warning or info")
	strict := fs.Bool("strict", false, "report what the rendering does not show (a Secret made elsewhere, keys of an open key set) as findings, not assumptions")
	rules := fs.Bool("rules", false, "list every rule with its severity and why, and exit")
	verbose := fs.Bool("v", false, "verbose: also list the assumptions made and the documents skipped")
	namespace := fs.String("namespace", "default", "namespace of the namespaced objects that name none")
	stdinName := fs.String("stdin-name", lint.StdinName, "file name to report documents read from stdin under (the chart or kustomization path, for PR annotations)")
	fluxSource := fs.String("flux-source", "", "the checkout Flux Kustomizations in the input apply from (the root their spec.path is relative to): each is built from it with Flux's own kustomize, as the agent builds the artifact")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if *rules {
		if err := lint.WriteRules(stdout); err != nil {
			return ExitError
		}
		return ExitOK
	}
	paths = append(paths, pos...)
	var threshold lint.Severity
	switch *failOn {
	case "critical", "warning", "info":
		threshold = lint.Severity(*failOn)
	default:
		fmt.Fprintf(stderr, "agent lint: --fail-on %q: want critical, warning or info\n", *failOn)
		return ExitError
	}
	switch *output {
	case "text", "json", "sarif":
	default:
		fmt.Fprintf(stderr, "agent lint: --output %q: want text, json or sarif\n", *output)
		return ExitError
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "agent lint: no input: give files, directories, or - for standard input (agent lint --help)")
		return ExitError
	}
	stdinUsed := 0
	for _, p := range paths {
		if p == "-" {
			stdinUsed++
		}
	}
	if stdinUsed > 1 {
		fmt.Fprintln(stderr, "agent lint: - (standard input) given more than once")
		return ExitError
	}
	in := lint.ReadArgs(paths, stdin)
	if *stdinName != lint.StdinName {
		in.Rename(lint.StdinName, *stdinName)
	}
	opts := lint.Options{Namespace: *namespace, Strict: *strict}
	if *fluxSource != "" {
		src, err := desired.ReadDir(*fluxSource, desired.Limits{})
		if err != nil {
			fmt.Fprintf(stderr, "agent lint: --flux-source %s: %v\n", *fluxSource, err)
			return ExitError
		}
		defer src.Wipe()
		opts.FluxSource = src
	}
	rep := lint.Evaluate(in, opts)
	switch *output {
	case "json":
		err = lint.WriteJSON(stdout, rep, threshold, *strict)
	case "sarif":
		err = lint.WriteSARIF(stdout, rep, version)
	default:
		err = lint.WriteText(stdout, rep, threshold, *verbose)
	}
	if err != nil {
		fmt.Fprintln(stderr, "agent lint: cannot write the result:", err)
		return ExitError
	}
	if *output != "text" {
		// Machine-readable output on stdout; the errors also on stderr, for the log.
		for _, p := range rep.Problems {
			if !p.Note {
				fmt.Fprintf(stderr, "agent lint: %s:%d: %s\n", p.File, p.Line, p.Message)
			}
		}
	}
	switch rep.Verdict(threshold) {
	case lint.ResultError:
		return ExitError
	case lint.ResultFail:
		return ExitFinding
	}
	return ExitOK
}

// LintMain is Lint on the process's standard streams.
func LintMain(args []string, stdout, stderr io.Writer, version string) int {
	return Lint(args, os.Stdin, stdout, stderr, version)
}

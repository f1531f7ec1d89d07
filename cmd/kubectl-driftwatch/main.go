// Command kubectl-driftwatch is driftwatch as a kubectl plugin: the one-shot
// commands of the agent, with the kubectl flags people type by habit.
//
//	kubectl driftwatch check [-n NS | -A] [--context C] [--kubeconfig K] [check flags]
//	kubectl driftwatch compare [-n NS] [--context C] [CONTEXT:][NS/]LIVE [CONTEXT:][NS/]CHECK
//	kubectl driftwatch lint [-f PATH | -] [lint flags]
//	kubectl driftwatch version
//
// -n/--namespace limits check to a namespace and is the namespace of compare's
// references without one (default: the context's namespace, else "default").
// A reference "staging:apps/api" reads that Secret through context staging:
// compare across clusters, values never leaving this process.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/cli"
)

// Set with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = "unknown"
)

func main() {
	lint := func(args []string, stdout, stderr io.Writer) int {
		return cli.LintMain(args, stdout, stderr, version)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, commands{cli.Check, cli.Compare, lint}, contextNamespace))
}

const usage = `kubectl driftwatch: secret-delivery checks, values never printed

usage:
  kubectl driftwatch check   [-n NAMESPACE | -A] [--context C] [--kubeconfig K] [--output text|json] [--fail-on S]
  kubectl driftwatch compare [-n NAMESPACE] [--context C] [CONTEXT:][NAMESPACE/]LIVE [CONTEXT:][NAMESPACE/]CHECK
  kubectl driftwatch lint    [-f PATH | -] [--output text|json|sarif] [--fail-on S] [--strict]
  kubectl driftwatch version

check    runs every detector once against the cluster (exit 1 on findings at or above --fail-on)
compare  compares two Secrets key by key, in one cluster or across two contexts
         (kubectl driftwatch compare staging:apps/api-config prod:apps/api-config)
lint     checks rendered manifests offline, no cluster needed
         (helm template . | kubectl driftwatch lint -)

'kubectl driftwatch COMMAND -h' lists a command's own flags.
`

// kubectlFlags are kubectl's global flags the plugin honours, taken out of the
// arguments wherever they stand.
type kubectlFlags struct {
	kubeconfig, context, namespace string
	allNamespaces                  bool
}

// takeKubectlFlags removes --kubeconfig, --context, -n/--namespace and
// -A/--all-namespaces (as "--f v", "--f=v", "-n v", "-nv") from args.
func takeKubectlFlags(args []string) (kubectlFlags, []string, error) {
	var k kubectlFlags
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		var target *string
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--kubeconfig", "-kubeconfig":
			target = &k.kubeconfig
		case "--context", "-context":
			target = &k.context
		case "--namespace", "-n":
			target = &k.namespace
		case "-A", "--all-namespaces":
			if hasVal && val != "true" {
				return k, nil, fmt.Errorf("%s takes no value", name)
			}
			k.allNamespaces = true
			continue
		default:
			if strings.HasPrefix(a, "-n") && len(a) > 2 && !strings.HasPrefix(a, "--") && a[2] != '=' {
				k.namespace = a[2:] // -nNAMESPACE
				continue
			}
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return k, nil, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			val = args[i]
		}
		if val == "" {
			return k, nil, fmt.Errorf("flag %s needs a value", name)
		}
		*target = val
	}
	if k.allNamespaces && k.namespace != "" {
		return k, nil, fmt.Errorf("-n/--namespace and -A/--all-namespaces exclude each other")
	}
	return k, rest, nil
}

// contextNamespace is the namespace of a kubeconfig context ("" for the
// current one), "default" when it names none.
func contextNamespace(kubeconfig, kctx string) (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kctx}).Namespace()
	if err != nil {
		return "", err
	}
	if ns == "" {
		ns = "default"
	}
	return ns, nil
}

type command func(args []string, stdout, stderr io.Writer) int

// commands are the agent's one-shot commands the plugin runs.
type commands struct{ check, compare, lint command }

func run(args []string, stdout, stderr io.Writer, cmds commands,
	nsOf func(kubeconfig, kctx string) (string, error)) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.ExitError
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return cli.ExitOK
	case "version", "--version":
		fmt.Fprintf(stdout, "kubectl-driftwatch %s (%s)\n", version, revision)
		return cli.ExitOK
	case "check", "compare":
	case "lint":
	default:
		fmt.Fprintf(stderr, "kubectl driftwatch: unknown command %q\n\n%s", sub, usage)
		return cli.ExitError
	}
	k, rest, err := takeKubectlFlags(args)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl driftwatch %s: %v\n", sub, err)
		return cli.ExitError
	}
	if sub == "lint" {
		// Offline: -n is the namespace of documents that name none (as
		// helm template --namespace); a cluster flag means nothing here.
		if k.context != "" || k.kubeconfig != "" || k.allNamespaces {
			fmt.Fprintln(stderr, "kubectl driftwatch lint: reads manifests, not a cluster: --context, --kubeconfig and -A have no meaning")
			return cli.ExitError
		}
		if k.namespace != "" {
			rest = append([]string{"--namespace", k.namespace}, rest...)
		}
		return cmds.lint(rest, stdout, stderr)
	}
	var conn []string
	if k.kubeconfig != "" {
		conn = append(conn, "--kubeconfig", k.kubeconfig)
	}
	if k.context != "" {
		conn = append(conn, "--context", k.context)
	}
	if sub == "check" {
		if k.namespace != "" {
			conn = append(conn, "--namespaces", k.namespace)
		}
		return cmds.check(append(conn, rest...), stdout, stderr)
	}
	if k.allNamespaces {
		fmt.Fprintln(stderr, "kubectl driftwatch compare: -A makes no sense here; name two Secrets")
		return cli.ExitError
	}
	// compare: give a namespace to references without one: -n, else the
	// namespace of the reference's context.
	out := conn
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if strings.HasPrefix(a, "-") {
			out = append(out, a)
			// The value of compare's own flags that take one.
			if (a == "--output" || a == "-output" || a == "-o" || a == "--timeout" || a == "-timeout") && i+1 < len(rest) {
				if a == "-o" {
					out[len(out)-1] = "--output"
				}
				i++
				out = append(out, rest[i])
			}
			continue
		}
		refCtx, ref := "", a
		if c, r, ok := strings.Cut(a, ":"); ok && (!strings.Contains(c, "/")) {
			refCtx, ref = c, r
		}
		if ref != "" && !strings.Contains(ref, "/") {
			ns := k.namespace
			if ns == "" {
				c := refCtx
				if c == "" {
					c = k.context
				}
				if ns, err = nsOf(k.kubeconfig, c); err != nil {
					fmt.Fprintf(stderr, "kubectl driftwatch compare: %s: no namespace (use -n or NAMESPACE/NAME): %v\n", a, err)
					return cli.ExitError
				}
			}
			ref = ns + "/" + ref
		}
		if refCtx != "" {
			ref = refCtx + ":" + ref
		}
		out = append(out, ref)
	}
	return cmds.compare(out, stdout, stderr)
}

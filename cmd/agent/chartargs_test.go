package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// TestChartArgsAreAgentFlags renders the Helm chart (deploy/chart/driftwatch)
// with the real helm, with values that take every branch of its agent
// arguments, and parses each rendered container's args and DRIFTWATCH_*
// environment with the agent's own flag set and checks: a chart value that
// renders a flag the agent does not have, or a value it refuses, would
// crash-loop every pod of a release, and deploy/'s tests only compare the
// rendered strings.
func TestChartArgsAreAgentFlags(t *testing.T) {
	helm := helmTool(t)
	chart := filepath.Join("..", "..", "deploy", "chart", "driftwatch")
	for _, sc := range []struct {
		name string
		set  []string
		// refused: the chart must refuse these values with this message,
		// because the agent refuses the args they would render.
		refused string
	}{
		{"defaults", nil, ""},
		{"every value", []string{
			"namespaces={team-a,team-b}", "excludeNamespaces={kube-system}", "inventory=true", "syncOverdueFactor=4",
			"noKeyLabel=true", "evaluateAhead=true", "logFormat=text", "logLevel=debug", "health.port=9100",
			"prometheusRule.runbookBaseURL=https://wiki.example.com/sre/driftwatch",
			"flux.artifacts=false", "flux.namespace=gitops", "flux.sourceHost=localhost:9090",
			"flux.allowedHosts={artifacts.example.com:443}", "flux.allowedCIDRs={10.0.0.0/8}", "flux.pollInterval=1m",
			"flux.timeout=45s", "flux.maxArtifactBytes=1048576", "flux.buildTimeout=1m",
			"argocd.server=https://argocd-server.argocd.svc", "web.configSecret=dw-web", "web.basicAuth=true",
			"extraArgs={--flip-window=2h}", "extraEnv[0].name=DRIFTWATCH_FLAP_THRESHOLD", "extraEnv[0].value=4",
		}, ""},
		{"secret page on", []string{"ui.secretPage=true", "ui.allowSecretPageWithoutAuth=true"}, ""},
		{"ui off", []string{"ui.enabled=false"}, ""},
		{"sharded", []string{"sharding.enabled=true", "sharding.shards=3", "sharding.watch=namespaces"}, ""},
		{"sharded, cluster watch, namespaced RBAC", []string{"sharding.enabled=true", "sharding.shards=3",
			"rbac.namespaced=true", "rbac.namespaces={team-a,team-b}"}, ""},
		{"sharded by namespace, some namespaces", []string{"sharding.enabled=true", "sharding.watch=namespaces", "namespaces={team-a}"},
			"sharding.watch=namespaces follows"},
		{"sharded by namespace, namespaced RBAC", []string{"sharding.enabled=true", "sharding.watch=namespaces",
			"rbac.namespaced=true", "rbac.namespaces={team-a}"}, "sharding.watch=namespaces follows"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			args := []string{"template", "dw", chart, "--namespace", "monitoring", "--kube-version", "v1.37.2"}
			for _, s := range sc.set {
				args = append(args, "--set", s)
			}
			out, err := runHelm(t, helm, args...)
			if sc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), sc.refused) {
					t.Fatalf("helm template: %v, want it refused with %q", err, sc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pods := renderedPods(t, out)
			if len(pods) == 0 {
				t.Fatalf("no Deployment or StatefulSet rendered")
			}
			for _, ps := range pods {
				c := ps.Containers[0]
				env := map[string]string{}
				for _, e := range c.Env {
					switch {
					case e.ValueFrom != nil && e.Name == "DRIFTWATCH_SHARD":
						env[e.Name] = "2" // the pod-index label of the last of 3 pods
					case e.ValueFrom == nil:
						env[e.Name] = e.Value
					}
				}
				o, err := agentAccepts(c.Args, env)
				if err != nil {
					t.Fatalf("the agent refuses the chart's args %q (env %v): %v", c.Args, env, err)
				}
				// What the values asked for reached the agent's options.
				if sc.name == "every value" {
					if !o.evaluateAhead || !o.inventory || !o.noKeyLabel || o.overdueFactor != 4 || o.flapThreshold != 4 ||
						o.flipWindow.String() != "2h0m0s" || len(o.flux.AllowedCIDRs) != 1 || o.web.ConfigFile == "" {
						t.Errorf("options from %q: evaluateAhead %v inventory %v noKeyLabel %v overdue %v flap %v flip %v cidrs %v web %q",
							c.Args, o.evaluateAhead, o.inventory, o.noKeyLabel, o.overdueFactor, o.flapThreshold, o.flipWindow,
							o.flux.AllowedCIDRs, o.web.ConfigFile)
					}
				}
				if sc.name == "sharded" && (o.shards != 3 || o.shard != 2 || o.shardWatch != "namespaces") {
					t.Errorf("sharded: shard %d of %d, watch %q", o.shard, o.shards, o.shardWatch)
				}
				if strings.HasPrefix(sc.name, "sharded, cluster watch") && (o.shards != 3 || o.shardWatch != "cluster" || o.namespaces != "team-a,team-b") {
					t.Errorf("%s: shard %d of %d, watch %q, namespaces %q", sc.name, o.shard, o.shards, o.shardWatch, o.namespaces)
				}
			}
		})
	}
}

// The plain manifests' Deployment (deploy/manifests, kubectl apply -k) runs
// the agent with args it accepts.
func TestManifestArgsAreAgentFlags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "manifests", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pods := renderedPods(t, string(b))
	if len(pods) != 1 {
		t.Fatalf("%d pod templates in deployment.yaml", len(pods))
	}
	args := pods[0].Containers[0].Args
	if _, err := agentAccepts(args, nil); err != nil || len(args) == 0 {
		t.Fatalf("the agent with the manifests' args %q: %v", args, err)
	}
}

// agentAccepts parses args and env (DRIFTWATCH_*) as the agent's run does and
// checks them as it does before it connects.
func agentAccepts(args []string, env map[string]string) (options, error) {
	var o options
	var stderr bytes.Buffer
	fs := newFlags(&o, &stderr)
	err := parseFlags(fs, args, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err == nil && fs.NArg() > 0 {
		err = errors.New("unexpected argument " + fs.Arg(0))
	}
	if err == nil {
		_, err = newLogger(o.logFormat, o.logLevel, io.Discard)
	}
	if err == nil {
		_, err = reconcileUI(fs, o.noKeyLabel, &o.web)
	}
	if err == nil {
		_, err = reconcileSecretPage(fs, o.demo, &o.web)
	}
	if err == nil {
		err = checkOptions(&o)
	}
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w (%s)", err, strings.TrimSpace(stderr.String()))
	}
	return o, err
}

// The agent refuses what the chart refuses for it (the two refusals above).
func TestCheckOptionsRefusesShardWatchWithNamespaces(t *testing.T) {
	o := options{shards: 2, shardWatch: "namespaces", namespaces: "team-a"}
	if err := checkOptions(&o); err == nil || !strings.Contains(err.Error(), "--shard-watch namespaces needs every namespace watched") {
		t.Fatalf("checkOptions: %v, want the refusal", err)
	}
	o.namespaces = ""
	if err := checkOptions(&o); err != nil {
		t.Fatalf("every namespace: %v", err)
	}
}

// renderedPods returns the pod specs of the Deployments and StatefulSets in a
// multi-document rendering.
func renderedPods(t *testing.T, out string) []corev1.PodSpec {
	t.Helper()
	var pods []corev1.PodSpec
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return pods
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, d.Spec.Template.Spec)
		case "StatefulSet":
			var s appsv1.StatefulSet
			if err := yaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, s.Spec.Template.Spec)
		}
	}
}

// helmTool is the helm test/tools/build.sh builds (tools.Tool, as the e2e
// stack finds it): missing, the test fails under CI and skips elsewhere (as
// deploy/'s tests do).
func helmTool(t *testing.T) string {
	t.Helper()
	p, err := tools.Tool(tools.HelmBin)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return p
}

// runHelm runs helm offline, with its home, cache, config and data in a temp dir.
func runHelm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home,
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "HELM_NO_PLUGINS=1")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), nil
}

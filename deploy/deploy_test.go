// Package deploy tests the Helm chart (deploy/chart/driftwatch) and the plain
// manifests (deploy/manifests): helm lint and helm template with several value
// sets, strict decoding of every rendered object into the real k8s.io/api types,
// read-only RBAC identical to deploy/manifests/clusterrole.yaml, a hardened pod,
// and the chart's copies of the alert rules and dashboards.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/alerts"
)

const (
	chart     = "chart/driftwatch"
	manifests = "manifests"
	release   = "dw"
	namespace = "monitoring"
	// The API server version the e2e stack runs; helm's own default (1.20) is below
	// the chart's kubeVersion.
	kubeVersion = "v1.37.2"
)

// tool finds a real binary in $DRIFTWATCH_TOOLS_BIN or on PATH. Missing: the test
// fails under CI and skips elsewhere.
func tool(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("DRIFTWATCH_TOOLS_BIN"); dir != "" {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found in $DRIFTWATCH_TOOLS_BIN or PATH: run test/tools/build.sh", name)
	}
	t.Skipf("%s not installed (test/tools/build.sh builds it); skipping", name)
	return ""
}

// helm runs helm offline, with its home, cache, config and data in a temp dir.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := tool(t, "helm")
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home,
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "data"), "HELM_NO_PLUGINS=1")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), out.String())
	}
	return out.String(), nil
}

// scenarios are the value sets every chart test renders.
var scenarios = []struct {
	name string
	args []string
}{
	{"defaults", nil},
	{"everything", []string{
		"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
		"--set", "dashboards.enabled=true", "--set", "podDisruptionBudget.enabled=true",
		"--set", "namespaces={team-a,team-b}", "--set", "excludeNamespaces={kube-system}",
		"--set", "noKeyLabel=true", "--set", "extraArgs={--flip-window=2h}", "--set", "logFormat=text",
		"--set", "metrics.job=dw-agent", "--set", "prometheusRule.additionalAlertLabels.team=platform",
		"--set", "prometheusRule.additionalAlertLabels.severity=ignored",
		"--set", "prometheusRule.runbookBaseURL=https://wiki.example.com/sre/driftwatch",
		"--set", "prometheusRule.clusterLabel=k8s_cluster",
		"--set", "prometheusRule.keepFiringFor=30m",
		"--set", "extraEnv[0].name=GOMEMLIMIT", "--set", "extraEnv[0].value=400MiB",
		"--set", "flux.allowedHosts={artifacts.example.com:443}", "--set", "flux.buildTimeout=1m",
		"--set", "argocd.server=https://argocd-server.argocd.svc", "--set", "evaluateAhead=true",
	}},
	{"sharded", []string{"--set", "sharding.enabled=true", "--set", "sharding.shards=3", "--set", "sharding.watch=namespaces", "--set", "podDisruptionBudget.enabled=true"}},
	{"namespaced", []string{"--set", "rbac.namespaced=true", "--set", "rbac.namespaces={team-a,team-b}"}},
}

func TestHelmLint(t *testing.T) {
	for _, sc := range scenarios {
		if out, err := helm(t, append([]string{"lint", "--strict", "--kube-version", kubeVersion, chart}, sc.args...)...); err != nil {
			t.Errorf("%s: %v", sc.name, err)
		} else {
			t.Logf("%s: %s", sc.name, strings.TrimSpace(out))
		}
	}
}

// values.schema.json rejects what would weaken or break the deployment.
func TestSchemaRejectsBadValues(t *testing.T) {
	if _, err := helm(t, "template", release, chart, "--kube-version", kubeVersion); err != nil {
		t.Fatalf("control: the defaults must render: %v", err)
	}
	for _, bad := range [][]string{
		{"--set", "securityContext.readOnlyRootFilesystem=false"},
		{"--set", "securityContext.runAsNonRoot=false"},
		{"--set", "securityContext.capabilities.add={NET_ADMIN}"},
		{"--set", "podSecurityContext.runAsNonRoot=false"},
		{"--set", "logFormat=xml"},
		{"--set", "rbac.namespaced=true"},
		{"--set", "extraArgs={oops}"},
		{"--set", "namespaces={Not_A_Namespace}"},
		{"--set", "unknownKey=1"},
		{"--set", "sharding.shards=0"},
		{"--set", "sharding.watch=pods"},
		{"--set", "prometheusRule.clusterLabel=k8s-cluster"},
		{"--set", "prometheusRule.clusterLabel=__cluster"},
		{"--set", "health.port=9742"},
		{"--set", "health.port=0"},
		{"--set", "health.port=http"},
		{"--set", "ui.secretPage=maybe"},
		{"--set", "flux.artifacts=maybe"},
		{"--set", "flux.namespace=Flux_System"},
		{"--set", "flux.maxArtifactBytes=64Mi"},
		{"--set", "flux.maxArtifactBytes=0"},
		{"--set", "flux.buildTimeout=soon"},
		{"--set", "flux.allowedCIDRs={10.0.0.0}"},
		{"--set", "flux.allowedHosts={https://artifacts.example.com}"},
		{"--set", "flux.sourceHost=http://localhost:9090"},
		{"--set", "argocd.server=argocd-server:443"},
		{"--set", "networkPolicy.egress.enabled=yes"},
		{"--set", "networkPolicy.egress.argocd.port=http"},
		{"--set", "networkPolicy.egress.ingress=true"},
	} {
		if _, err := helm(t, append([]string{"template", release, chart, "--kube-version", kubeVersion}, bad...)...); err == nil {
			t.Errorf("helm template %v: accepted", bad)
		}
	}
}

// object is one decoded document.
type object struct {
	kind, name, ns string
	obj            any
}

// Local mirrors of the prometheus-operator fields the chart sets (json names as in
// monitoring.coreos.com/v1). The operator's Go module would pull controller-runtime
// and newer k8s.io/utils into the agent's go.mod, so these are decoded strictly
// against a subset: any misspelt or unknown field fails.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel          string `json:"jobLabel"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port              string `json:"port"`
			Path              string `json:"path"`
			HonorLabels       bool   `json:"honorLabels"`
			Interval          string `json:"interval"`
			ScrapeTimeout     string `json:"scrapeTimeout"`
			Relabelings       []any  `json:"relabelings,omitempty"`
			MetricRelabelings []any  `json:"metricRelabelings,omitempty"`
			// With a web config (web_test.go).
			Scheme    string         `json:"scheme,omitempty"`
			TLSConfig map[string]any `json:"tlsConfig,omitempty"`
			BasicAuth map[string]any `json:"basicAuth,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type ruleGroups struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert         string            `json:"alert,omitempty"`
			Record        string            `json:"record,omitempty"`
			Expr          string            `json:"expr"`
			For           string            `json:"for,omitempty"`
			KeepFiringFor string            `json:"keep_firing_for,omitempty"`
			Labels        map[string]string `json:"labels,omitempty"`
			Annotations   map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleGroups `json:"spec"`
}

func newTyped(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}, nil
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &serviceMonitor{}, nil
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &prometheusRule{}, nil
	}
	return nil, fmt.Errorf("unexpected object %s %s", apiVersion, kind)
}

// decodeAll strict-decodes every YAML document into its typed object.
func decodeAll(t *testing.T, where string, data []byte) []object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var tm struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if tm.Kind == "" {
			continue // empty document (comments only)
		}
		obj, err := newTyped(tm.APIVersion, tm.Kind)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Errorf("%s: %s %s: strict decode: %v", where, tm.Kind, tm.Metadata.Name, err)
			continue
		}
		out = append(out, object{tm.Kind, tm.Metadata.Name, tm.Metadata.Namespace, obj})
	}
	return out
}

func render(t *testing.T, args ...string) []object {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, chart, "--namespace", namespace, "--kube-version", kubeVersion}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, "helm template "+strings.Join(args, " "), []byte(out))
}

func byKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func manifestClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifests, "clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &cr); err != nil {
		t.Fatal(err)
	}
	if len(cr.Rules) == 0 {
		t.Fatal("deploy/manifests/clusterrole.yaml has no rules")
	}
	return &cr
}

var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// checkReadOnly: get/list/watch only, no wildcards, no subresources, no
// non-resource URLs, no escalation through aggregation.
func checkReadOnly(t *testing.T, where string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for _, r := range rules {
		for _, v := range r.Verbs {
			if !readVerbs[v] {
				t.Errorf("%s: verb %q: only get/list/watch are allowed", where, v)
			}
		}
		for _, s := range append(append([]string{}, r.APIGroups...), r.Resources...) {
			if strings.Contains(s, "*") || strings.Contains(s, "/") {
				t.Errorf("%s: %q: wildcards and subresources are not allowed", where, s)
			}
		}
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("%s: unexpected nonResourceURLs/resourceNames in %+v", where, r)
		}
	}
}

// withoutResource drops a resource from every rule (the namespaced Role cannot
// grant cluster-scoped ClusterSecretStores).
func withoutResource(rules []rbacv1.PolicyRule, res string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r := *r.DeepCopy()
		var keep []string
		for _, x := range r.Resources {
			if x != res {
				keep = append(keep, x)
			}
		}
		if len(keep) == 0 {
			continue // a rule left with no resource is no rule
		}
		r.Resources = keep
		out = append(out, r)
	}
	return out
}

// checkPod: hardened container, token mounted only by the agent's pod, metrics
// port and probes.
func checkPod(t *testing.T, where string, spec corev1.PodSpec) {
	t.Helper()
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Errorf("%s: the agent's pod must mount its token explicitly (automountServiceAccountToken: true)", where)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("%s: host namespaces", where)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod must run as a non-root uid", where)
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%s: want exactly the agent container", where)
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatalf("%s: no container securityContext", where)
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s: runAsNonRoot", where)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: readOnlyRootFilesystem", where)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", where)
	case sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities must drop ALL and add none", where)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && psc != nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile RuntimeDefault", where)
	}
	checkProbes(t, where, c)
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: memory request and limit", where)
	}
	if !contains(c.Args, "--listen=:9742") {
		t.Errorf("%s: args %v: want --listen=:9742", where, c.Args)
	}
	for _, v := range c.VolumeMounts {
		t.Errorf("%s: unexpected volume mount %s: the agent needs no writable path", where, v.Name)
	}
}

// checkProbes: the metrics port 9742 and the probe port "health", served by
// --health-probe-bind-address; both probes HTTP GETs on the probe port (plain
// HTTP, no credentials) in every mode, so readiness waits for the informers
// to sync even with TLS and basic auth on the metrics port.
func checkProbes(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	if len(c.Ports) != 2 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9742 || c.Ports[1].Name != "health" {
		t.Fatalf("%s: want ports metrics (9742) and health, got %+v", where, c.Ports)
	}
	health := c.Ports[1].ContainerPort
	if want := fmt.Sprintf("--health-probe-bind-address=:%d", health); !contains(c.Args, want) {
		t.Errorf("%s: args %q lack %s (the health port)", where, c.Args, want)
	}
	for name, p := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.TCPSocket != nil || p.Exec != nil || p.GRPC != nil ||
			p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "health" ||
			(p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP) || len(p.HTTPGet.HTTPHeaders) != 0 {
			t.Errorf("%s: probe %s: want an HTTP GET on port health, got %+v", where, name, p)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func podSpecs(objs []object) map[string]corev1.PodSpec {
	out := map[string]corev1.PodSpec{}
	for _, o := range objs {
		switch w := o.obj.(type) {
		case *appsv1.Deployment:
			out["Deployment "+o.name] = w.Spec.Template.Spec
		case *appsv1.StatefulSet:
			out["StatefulSet "+o.name] = w.Spec.Template.Spec
		}
	}
	return out
}

// Checks that hold for every rendering and for the plain manifests.
func checkCommon(t *testing.T, where string, objs []object) {
	t.Helper()
	pods := podSpecs(objs)
	if len(pods) != 1 {
		t.Errorf("%s: want exactly one workload, got %d", where, len(pods))
	}
	for w, spec := range pods {
		checkPod(t, where+": "+w, spec)
	}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *rbacv1.ClusterRole:
			checkReadOnly(t, where+": ClusterRole "+o.name, v.Rules)
			if v.AggregationRule != nil {
				t.Errorf("%s: ClusterRole %s aggregates", where, o.name)
			}
		case *rbacv1.Role:
			checkReadOnly(t, where+": Role "+o.name, v.Rules)
		case *corev1.ServiceAccount:
			if v.AutomountServiceAccountToken == nil || *v.AutomountServiceAccountToken {
				t.Errorf("%s: ServiceAccount %s: automountServiceAccountToken must be false (only the agent's pod mounts it)", where, o.name)
			}
		case *corev1.Service:
			if len(v.Spec.Ports) != 1 || v.Spec.Ports[0].Name != "metrics" || v.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("%s: Service %s: want the metrics port", where, o.name)
			}
		}
		switch o.kind {
		case "Namespace", "ClusterRole", "ClusterRoleBinding":
		default:
			if o.ns == "" {
				t.Errorf("%s: %s %s has no namespace", where, o.kind, o.name)
			}
		}
	}
	// Bindings bind the workload's ServiceAccount to a role that exists here.
	roles := map[string]bool{}
	for _, o := range objs {
		if o.kind == "ClusterRole" || o.kind == "Role" {
			roles[o.kind+"/"+o.ns+"/"+o.name] = true
		}
	}
	for _, o := range objs {
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		ns := ""
		switch b := o.obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			ref, subjects = b.RoleRef, b.Subjects
		case *rbacv1.RoleBinding:
			ref, subjects, ns = b.RoleRef, b.Subjects, o.ns
		default:
			continue
		}
		if ref.Kind == "ClusterRole" {
			ns = ""
		}
		if !roles[ref.Kind+"/"+ns+"/"+ref.Name] {
			t.Errorf("%s: %s %s binds missing %s %s", where, o.kind, o.name, ref.Kind, ref.Name)
		}
		for _, s := range subjects {
			found := false
			for _, spec := range pods {
				found = found || spec.ServiceAccountName == s.Name
			}
			if s.Kind != "ServiceAccount" || !found {
				t.Errorf("%s: %s %s: subject %+v is not the agent's ServiceAccount", where, o.kind, o.name, s)
			}
		}
	}
}

func TestChartRenders(t *testing.T) {
	want := manifestClusterRole(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			objs := render(t, sc.args...)
			checkCommon(t, sc.name, objs)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.kind]++
			}
			t.Logf("%s: %v", sc.name, kinds)
			switch sc.name {
			case "defaults":
				crs := byKind(objs, "ClusterRole")
				if len(crs) != 1 {
					t.Fatalf("want one ClusterRole, got %d", len(crs))
				}
				if got := crs[0].obj.(*rbacv1.ClusterRole).Rules; !reflect.DeepEqual(got, want.Rules) {
					t.Errorf("chart ClusterRole rules differ from deploy/manifests/clusterrole.yaml:\nchart:     %+v\nmanifests: %+v", got, want.Rules)
				}
				for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "PodDisruptionBudget", "StatefulSet", "Role"} {
					if kinds[k] != 0 {
						t.Errorf("%s rendered by default", k)
					}
				}
				d := byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment)
				if got := d.Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got,
					[]string{"--listen=:9742", "--log-format=json", "--log-level=info", "--inventory=false", "--sync-overdue-factor=3",
						"--ui.secret-page=false", "--health-probe-bind-address=:8081"}) {
					t.Errorf("default args %q", got)
				}
			case "everything":
				checkEverything(t, objs)
			case "sharded":
				if kinds["Deployment"] != 0 || kinds["StatefulSet"] != 1 {
					t.Fatalf("sharding: want a StatefulSet instead of the Deployment: %v", kinds)
				}
				ss := byKind(objs, "StatefulSet")[0].obj.(*appsv1.StatefulSet)
				if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
					t.Errorf("replicas %v, want 3", ss.Spec.Replicas)
				}
				c := ss.Spec.Template.Spec.Containers[0]
				if !contains(c.Args, "--total-shards=3") || !contains(c.Args, "--shard-watch=namespaces") {
					t.Errorf("args %v: want --total-shards=3 and --shard-watch=namespaces", c.Args)
				}
				var shardEnv *corev1.EnvVar
				for i := range c.Env {
					if c.Env[i].Name == "DRIFTWATCH_SHARD" {
						shardEnv = &c.Env[i]
					}
				}
				if shardEnv == nil || shardEnv.ValueFrom == nil || shardEnv.ValueFrom.FieldRef == nil ||
					shardEnv.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
					t.Errorf("DRIFTWATCH_SHARD must come from the pod-index label: %+v", shardEnv)
				}
				svc := byKind(objs, "Service")[0].obj.(*corev1.Service)
				if svc.Spec.ClusterIP != "None" || ss.Spec.ServiceName != svc.Name {
					t.Errorf("sharded mode: want the headless Service as serviceName")
				}
			case "namespaced":
				if kinds["Role"] != 2 || kinds["RoleBinding"] != 2 {
					t.Errorf("want a Role and RoleBinding per namespace: %v", kinds)
				}
				wantNS := withoutResource(withoutResource(want.Rules, "clustersecretstores"), "namespaces")
				for _, o := range byKind(objs, "Role") {
					if got := o.obj.(*rbacv1.Role).Rules; !reflect.DeepEqual(got, wantNS) {
						t.Errorf("Role %s/%s rules %+v, want the manifest rules without clustersecretstores and namespaces %+v", o.ns, o.name, got, wantNS)
					}
				}
				crs := byKind(objs, "ClusterRole")
				if len(crs) != 1 {
					t.Fatalf("want only the ClusterSecretStore ClusterRole, got %d", len(crs))
				}
				if got := crs[0].obj.(*rbacv1.ClusterRole).Rules; len(got) != 1 || !reflect.DeepEqual(got[0].Resources, []string{"clustersecretstores"}) {
					t.Errorf("namespaced mode's ClusterRole grants %+v", got)
				}
				d := byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment)
				if !contains(d.Spec.Template.Spec.Containers[0].Args, "--namespaces=team-a,team-b") {
					t.Errorf("namespaced mode must restrict the agent to rbac.namespaces: %v", d.Spec.Template.Spec.Containers[0].Args)
				}
			}
		})
	}
}

func checkEverything(t *testing.T, objs []object) {
	t.Helper()
	d := byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--namespaces=team-a,team-b", "--exclude-namespaces=kube-system", "--no-key-label", "--flip-window=2h", "--log-format=text",
		"--flux-allowed-hosts=artifacts.example.com:443", "--flux-build-timeout=1m", "--argocd-server=https://argocd-server.argocd.svc",
		"--evaluate-ahead"} {
		if !contains(args, a) {
			t.Errorf("args %q: want %s", args, a)
		}
	}
	svc := byKind(objs, "Service")[0].obj.(*corev1.Service)
	sms := byKind(objs, "ServiceMonitor")
	if len(sms) != 1 {
		t.Fatalf("want a ServiceMonitor")
	}
	sm := sms[0].obj.(*serviceMonitor)
	if sm.Spec.JobLabel == "" || svc.Labels[sm.Spec.JobLabel] != "dw-agent" {
		t.Errorf("ServiceMonitor jobLabel %q: the Service's label must carry metrics.job (got %q)", sm.Spec.JobLabel, svc.Labels[sm.Spec.JobLabel])
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %v does not select the Service", sm.Spec.Selector)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
	// The findings' own namespace (and pod, container) labels must win over
	// the operator's target labels of the same names.
	if len(sm.Spec.Endpoints) == 1 && !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor endpoint without honorLabels: the findings' namespace label would become exported_namespace")
	}

	// PrometheusRule: the alert file with the job substituted and the extra labels.
	prs := byKind(objs, "PrometheusRule")
	if len(prs) != 1 {
		t.Fatalf("want a PrometheusRule")
	}
	got := prs[0].obj.(*prometheusRule).Spec
	// The chart makes the substitutions `agent rules` makes.
	rendered, err := alerts.Render(alerts.RenderOptions{Job: "dw-agent", RunbookBaseURL: "https://wiki.example.com/sre/driftwatch", ClusterLabel: "k8s_cluster", KeepFiringFor: "30m"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rendered), alerts.RunbookBase) || !strings.Contains(string(rendered), "https://wiki.example.com/sre/driftwatch/DriftwatchSecretMissingKeyConsumed.md") {
		t.Errorf("alerts.Render did not move every runbook_url to the base URL")
	}
	var wantRG ruleGroups
	if err := yaml.UnmarshalStrict(rendered, &wantRG); err != nil {
		t.Fatal(err)
	}
	for gi := range wantRG.Groups {
		for ri := range wantRG.Groups[gi].Rules {
			r := &wantRG.Groups[gi].Rules[ri]
			r.Labels["team"] = "platform" // severity stays the rule's own
		}
	}
	if !reflect.DeepEqual(got, wantRG) {
		t.Errorf("PrometheusRule spec differs from alerts/driftwatch.rules.yaml (job dw-agent, cluster label k8s_cluster, keep_firing_for 30m, team label)")
	}
	kept := 0
	for _, g := range got.Groups {
		for _, r := range g.Rules {
			switch r.KeepFiringFor {
			case "30m":
				kept++
			case "":
			default:
				t.Errorf("PrometheusRule: %s keep_firing_for %q, want prometheusRule.keepFiringFor 30m", r.Alert, r.KeepFiringFor)
			}
		}
	}
	if kept == 0 {
		t.Errorf("PrometheusRule: no alert with keep_firing_for 30m")
	}
	if s := fmt.Sprint(got); !strings.Contains(s, "max by (k8s_cluster, job, namespace, secret)") || strings.Contains(s, "(cluster,") {
		t.Errorf("PrometheusRule: cluster label not renamed")
	}
	if len(got.Groups) == 0 || strings.Contains(fmt.Sprint(got), `job="driftwatch"`) {
		t.Errorf("PrometheusRule: job not substituted or no groups")
	}
	// The rendered rules are valid for Prometheus too (promtool, when installed).
	if p, err := exec.LookPath(filepath.Join(os.Getenv("DRIFTWATCH_TOOLS_BIN"), "promtool")); err == nil {
		b, _ := yaml.Marshal(got)
		f := filepath.Join(t.TempDir(), "rendered.rules.yaml")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(p, "check", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules on the rendered PrometheusRule: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not in $DRIFTWATCH_TOOLS_BIN: rendered rules not checked with promtool")
	}

	// Dashboards: one ConfigMap per JSON file, with the sidecar label.
	cms := byKind(objs, "ConfigMap")
	files, _ := filepath.Glob("../dashboards/*.json")
	if len(cms) != len(files) || len(files) == 0 {
		t.Fatalf("%d dashboard ConfigMaps for %d dashboards", len(cms), len(files))
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		found := false
		for _, o := range cms {
			cm := o.obj.(*corev1.ConfigMap)
			if cm.Labels["grafana_dashboard"] != "1" {
				t.Errorf("ConfigMap %s: no grafana_dashboard label", cm.Name)
			}
			if data, ok := cm.Data[filepath.Base(f)]; ok {
				found = true
				if strings.TrimSpace(data) != strings.TrimSpace(string(want)) {
					t.Errorf("ConfigMap %s: %s differs from dashboards/", cm.Name, filepath.Base(f))
				}
			}
		}
		if !found {
			t.Errorf("no ConfigMap carries %s", filepath.Base(f))
		}
	}
	if len(byKind(objs, "PodDisruptionBudget")) != 1 {
		t.Errorf("want a PodDisruptionBudget")
	}
	env := d.Spec.Template.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "GOMEMLIMIT" {
		t.Errorf("extraEnv: %+v", env)
	}
}

// The plain manifests: strict-decoded, read-only, hardened, listed in the
// kustomization, the same ClusterRole the chart renders.
func TestManifests(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(manifests, "*.yaml"))
	var all []object
	var names []string
	for _, p := range paths {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		names = append(names, filepath.Base(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, decodeAll(t, p, b)...)
	}
	checkCommon(t, "manifests", all)

	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(manifests, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	res := append([]string(nil), k.Resources...)
	sort.Strings(res)
	if k.Kind != "Kustomization" || !reflect.DeepEqual(res, names) {
		t.Errorf("kustomization resources %v, want every manifest %v", k.Resources, names)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"} {
		if len(byKind(all, kind)) != 1 {
			t.Errorf("manifests: want one %s", kind)
		}
	}
	d := byKind(all, "Deployment")[0].obj.(*appsv1.Deployment)
	if sa := byKind(all, "ServiceAccount")[0]; d.Spec.Template.Spec.ServiceAccountName != sa.name || d.Namespace != sa.ns {
		t.Errorf("the Deployment must run as the ServiceAccount")
	}
}

// The chart ships copies of alerts/driftwatch.rules.yaml and dashboards/*.json
// (helm cannot read files outside the chart). DRIFTWATCH_UPDATE=1 refreshes them.
func TestChartCopiesInSync(t *testing.T) {
	pairs := map[string]string{"../alerts/driftwatch.rules.yaml": filepath.Join(chart, "files/driftwatch.rules.yaml")}
	files, _ := filepath.Glob("../dashboards/*.json")
	if len(files) == 0 {
		t.Fatal("no dashboards")
	}
	for _, f := range files {
		pairs[f] = filepath.Join(chart, "dashboards", filepath.Base(f))
	}
	copies, _ := filepath.Glob(filepath.Join(chart, "dashboards/*.json"))
	if len(copies) != len(files) {
		t.Errorf("chart dashboards %v do not match dashboards/ %v", copies, files)
	}
	for src, dst := range pairs {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(dst)
		if bytes.Equal(got, want) {
			continue
		}
		if os.Getenv("DRIFTWATCH_UPDATE") == "1" {
			if err := os.WriteFile(dst, want, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated %s", dst)
			continue
		}
		t.Errorf("%s differs from %s: run DRIFTWATCH_UPDATE=1 go test ./deploy/ -run CopiesInSync", dst, src)
	}
}

package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

var (
	esGVR  = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	vwcGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// ---- ESO's chart as its release packages it ---------------------------------

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// writeESOChart copies ESO v0.20.4's chart folder (deploy/charts/external-secrets,
// as test/tools/build.sh caches it) to dir and adds the CRD templates ESO's
// release adds when it packages the chart (hack/helm.generate.sh, `make
// helm.generate`): one templates/crds/<singular>.yaml per CRD of
// deploy/crds/bundle.yaml, guarded by installCRDs and, for the Cluster* kinds
// and PushSecret, by crds.create<Kind>. It returns the number of CRDs.
func writeESOChart(t *testing.T, dir string) int {
	t.Helper()
	src, err := tools.UpstreamPath(tools.ESOChartDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	bundle, err := tools.UpstreamPath(tools.ESOCRDFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range docSep.Split(string(b), -1) {
		var crd struct {
			Kind string `json:"kind"`
			Spec struct {
				Names struct{ Kind, Singular string } `json:"names"`
			} `json:"spec"`
		}
		if strings.TrimSpace(doc) == "" {
			continue
		}
		if err := yaml.Unmarshal([]byte(doc), &crd); err != nil {
			t.Fatalf("%s: %v", bundle, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Names.Singular == "" {
			t.Fatalf("%s: a document that is not a CRD: kind %q", bundle, crd.Kind)
		}
		guard := "{{- if .Values.installCRDs }}"
		if k := crd.Spec.Names.Kind; strings.Contains(k, "Cluster") || strings.Contains(k, "PushSecret") {
			guard = fmt.Sprintf("{{- if and (.Values.installCRDs) (.Values.crds.create%s) }}", k)
		}
		p := filepath.Join(dir, "templates", "crds", crd.Spec.Names.Singular+".yaml")
		if err := os.WriteFile(p, []byte(guard+"\n"+strings.TrimSpace(doc)+"\n{{- end }}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// ---- Argo CD Applications ------------------------------------------------------

// appState is what an Application's status says, as Argo CD wrote it.
type appState struct {
	Sync, Revision, Health       string
	Phase, SyncedRev, Message    string // status.operationState
	Operation                    bool   // .operation set: a sync requested or running
	FinishedAt                   string
	Resources, SyncResult, Conds []map[string]any
	Deleting                     bool
}

func (s appState) String() string {
	return fmt.Sprintf("sync=%s revision=%.8s health=%s operation: phase=%s syncResult.revision=%.8s pending=%v message=%q",
		s.Sync, s.Revision, s.Health, s.Phase, s.SyncedRev, s.Operation, s.Message)
}

// resources summarizes status.resources: kind/name status, grouped by status
// for the kinds there are many of.
func (s appState) resources() string {
	byKind := map[string]map[string]int{}
	var named []string
	for _, r := range s.Resources {
		kind, status := fmt.Sprint(r["kind"]), fmt.Sprint(r["status"])
		switch kind {
		case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Service":
			if byKind[kind] == nil {
				byKind[kind] = map[string]int{}
			}
			byKind[kind][status]++
		default:
			h := ""
			if hm, ok := r["health"].(map[string]any); ok {
				h = fmt.Sprintf(" health=%v", hm["status"])
			}
			named = append(named, fmt.Sprintf("%s %s: %s%s", kind, r["name"], status, h))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		named = append(named, fmt.Sprintf("%d %s: %v", sum(byKind[k]), k, byKind[k]))
	}
	slices.Sort(named)
	return strings.Join(named, "; ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (r *run) app(name string) appState {
	r.t.Helper()
	u, err := r.c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatalf("get Application %s: %v", name, err)
	}
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(u.Object, path...); return v }
	list := func(path ...string) []map[string]any {
		l, _, _ := unstructured.NestedSlice(u.Object, path...)
		var out []map[string]any
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	_, op := u.Object["operation"]
	return appState{
		Sync: str("status", "sync", "status"), Revision: str("status", "sync", "revision"), Health: str("status", "health", "status"),
		Phase: str("status", "operationState", "phase"), SyncedRev: str("status", "operationState", "syncResult", "revision"),
		Message: str("status", "operationState", "message"), FinishedAt: str("status", "operationState", "finishedAt"),
		Operation: op, Resources: list("status", "resources"), SyncResult: list("status", "operationState", "syncResult", "resources"),
		Conds: list("status", "conditions"), Deleting: u.GetDeletionTimestamp() != nil,
	}
}

// waitApp polls the Application until cond holds.
func (r *run) waitApp(name, what string, cond func(appState) bool) appState {
	r.t.Helper()
	deadline := time.Now().Add(waitArgo)
	for {
		s := r.app(name)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("Application %s: not %s within %s: %s\nresources: %s\nconditions: %v\nsync result: %v",
				name, what, waitArgo, s, s.resources(), s.Conds, s.SyncResult)
		}
		time.Sleep(time.Second)
	}
}

// syncedAt: Argo CD compares rev, its last operation synced rev with phase
// Succeeded and no operation is pending.
func syncedAt(rev string) func(appState) bool {
	return func(s appState) bool {
		return s.Revision == rev && s.SyncedRev == rev && s.Phase == "Succeeded" && !s.Operation
	}
}

// createApp applies an Application in argocd and deletes it when the test
// ends (without a finalizer: what it synced stays for the namespaces'
// cleanup).
func (r *run) createApp(manifest string) {
	r.t.Helper()
	for _, o := range r.c.Apply(r.t, gitops.ArgoCDNamespace, manifest) {
		name := o.GetName()
		r.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := r.c.Dynamic.Resource(gitops.ArgoGVR).Namespace(gitops.ArgoCDNamespace).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				r.t.Logf("delete Application %s: %v", name, err)
			}
		})
	}
}

// ---- facts (names, reasons and managers; never values) ------------------------------

// secretFacts names a Secret's keys (with byte lengths), its owners, the
// managers of its managedFields and its annotations' names, or says it is
// absent.
func (r *run) secretFacts(ns, name string) string {
	s, err := r.c.Client.CoreV1().Secrets(ns).Get(r.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("Secret %s/%s: absent", ns, name)
	}
	if err != nil {
		return fmt.Sprintf("Secret %s/%s: %v", ns, name, err)
	}
	var keys, owners, managers []string
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		keys = append(keys, fmt.Sprintf("%s(%dB)", k, len(s.Data[k])))
	}
	for _, o := range s.OwnerReferences {
		owners = append(owners, o.Kind+"/"+o.Name)
	}
	for _, m := range s.ManagedFields {
		managers = append(managers, fmt.Sprintf("%s(%s)", m.Manager, m.Operation))
	}
	return fmt.Sprintf("Secret %s/%s: keys %v, owners %v, managers %v, annotations %v", ns, name, keys, owners, managers,
		slices.Sorted(maps.Keys(s.Annotations)))
}

// esFacts names an ExternalSecret's Ready condition (status, reason,
// message), its finalizers and the managers of its managedFields.
func (r *run) esFacts(ns, name string) string {
	u, err := r.c.Dynamic.Resource(esGVR).Namespace(ns).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("ExternalSecret %s/%s: %v", ns, name, err)
	}
	cond := readyCondition(u)
	var managers []string
	for _, m := range u.GetManagedFields() {
		sub := ""
		if m.Subresource != "" {
			sub = "/" + m.Subresource
		}
		managers = append(managers, fmt.Sprintf("%s(%s%s)", m.Manager, m.Operation, sub))
	}
	_, la := u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]
	return fmt.Sprintf("ExternalSecret %s/%s: Ready=%s reason=%s message=%q; finalizers %v; managers %v; last-applied annotation %v",
		ns, name, cond["status"], cond["reason"], cond["message"], u.GetFinalizers(), managers, la)
}

func readyCondition(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m
		}
	}
	return map[string]any{}
}

// waitESReady waits until the ExternalSecret's Ready condition has status
// True and the given reason.
func (r *run) waitESReady(ns, name, reason string) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("ExternalSecret %s/%s Ready=True %s", ns, name, reason), waitArgo, func() (bool, error) {
		u, err := r.c.Dynamic.Resource(esGVR).Namespace(ns).Get(r.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := readyCondition(u)
		if c["status"] == "True" && c["reason"] == reason {
			return true, nil
		}
		return false, fmt.Errorf("Ready %v", c)
	})
}

// secretKeys returns the keys of a Secret (nil when it does not exist).
func (r *run) secretKeys(ns, name string) []string {
	s, err := r.c.Client.CoreV1().Secrets(ns).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.Data))
}

// waitSecretKeys waits until Secret ns/name holds exactly keys.
func (r *run) waitSecretKeys(ns, name string, keys ...string) {
	r.t.Helper()
	slices.Sort(keys)
	r.waitFor(fmt.Sprintf("Secret %s/%s with keys %v", ns, name, keys), waitArgo, func() (bool, error) {
		got := r.secretKeys(ns, name)
		if slices.Equal(got, keys) {
			return true, nil
		}
		return false, fmt.Errorf("keys %v", got)
	})
}

// vwcFacts names each webhook of a ValidatingWebhookConfiguration with its
// failurePolicy and whether a caBundle was injected.
func (r *run) vwcFacts(name string) string {
	u, err := r.c.Dynamic.Resource(vwcGVR).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("ValidatingWebhookConfiguration %s: %v", name, err)
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var out []string
	for _, h := range hooks {
		m, _ := h.(map[string]any)
		ca, _, _ := unstructured.NestedString(m, "clientConfig", "caBundle")
		out = append(out, fmt.Sprintf("%v failurePolicy=%v caBundle=%v", m["name"], m["failurePolicy"], ca != ""))
	}
	var managers []string
	for _, m := range u.GetManagedFields() {
		managers = append(managers, fmt.Sprintf("%s(%s)", m.Manager, m.Operation))
	}
	return fmt.Sprintf("ValidatingWebhookConfiguration %s: %s; managers %v", name, strings.Join(out, ", "), managers)
}

// crdFacts counts the ESO CRDs by whether they carry a last-applied
// annotation and an Argo CD tracking annotation, and names the largest.
func (r *run) crdFacts() string {
	l, err := r.c.Dynamic.Resource(crdGVR).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var eso, lastApplied, tracked int
	var largest, managers string
	var size int
	keys := map[string]bool{}
	for _, u := range l.Items {
		if !strings.HasSuffix(u.GetName(), "external-secrets.io") {
			continue
		}
		eso++
		if _, ok := u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			lastApplied++
		}
		if _, ok := u.GetAnnotations()["argocd.argoproj.io/tracking-id"]; ok {
			tracked++
		}
		for k := range u.GetAnnotations() {
			keys["annotation "+k] = true
		}
		for k := range u.GetLabels() {
			keys["label "+k] = true
		}
		b, _ := json.Marshal(u.Object["spec"])
		if len(b) > size {
			size, largest = len(b), u.GetName()
			managers = ""
			for _, m := range u.GetManagedFields() {
				managers += fmt.Sprintf(" %s(%s)", m.Manager, m.Operation)
			}
		}
	}
	return fmt.Sprintf("%d ESO CRDs: %d with Argo CD's tracking annotation, %d with a last-applied annotation (metadata keys seen: %v); the largest spec: %s (%d KiB of JSON, the last-applied limit is 256 KiB; managers%s)",
		eso, tracked, lastApplied, slices.Sorted(maps.Keys(keys)), largest, size/1024, managers)
}

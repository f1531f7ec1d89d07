package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
)

func checkPod(ns, name string, envFrom ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	c := corev1.Container{Name: "app", Image: "app:1"}
	for _, s := range envFrom {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	p.Spec.Containers = []corev1.Container{c}
	p.Status.Phase = corev1.PodRunning
	return p
}

func coreOnly(objs ...runtime.Object) Connect {
	return func(string, string) (agent.Clients, error) {
		return agent.Clients{Core: fake.NewClientset(objs...)}, nil // no Dynamic/Discovery: ESO absent
	}
}

func runCheck(t *testing.T, connect Connect, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := CheckWith(args, &out, &errb, connect)
	return code, out.String(), errb.String()
}

func TestCheckExitCodes(t *testing.T) {
	healthy := []runtime.Object{
		secretObj("app", "config", map[string][]byte{"A": []byte("1")}),
		checkPod("app", "web", "config"),
	}
	if code, out, errs := runCheck(t, coreOnly(healthy...)); code != ExitOK || !strings.Contains(out, "No findings.") || !strings.Contains(out, "PASS") {
		t.Fatalf("healthy: exit %d\n%s\n%s", code, out, errs)
	}

	broken := append(healthy, checkPod("app", "worker", "flags")) // envFrom of an absent Secret: critical
	code, out, errs := runCheck(t, coreOnly(broken...))
	if code != ExitFinding {
		t.Fatalf("absent Secret: exit %d\n%s\n%s", code, out, errs)
	}
	for _, s := range []string{"MISSING KEYS (1)", "critical", "secret_absent", "app/flags", "source=pod", "FAIL: 1 critical",
		"externalsecrets=crd_absent"} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}

	// A warning only (duplicate credentials) fails at warning, passes at critical.
	dup := append(healthy, secretObj("app", "config-copy", map[string][]byte{"A": []byte("1")}))
	if code, out, _ := runCheck(t, coreOnly(dup...)); code != ExitFinding || !strings.Contains(out, "secret_duplicate_credentials") {
		t.Fatalf("warning at --fail-on warning: exit %d\n%s", code, out)
	}
	if code, out, _ := runCheck(t, coreOnly(dup...), "--fail-on", "critical"); code != ExitOK || !strings.Contains(out, "PASS: 0 critical, 1 warning") {
		t.Fatalf("warning at --fail-on critical: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{{"--fail-on", "page"}, {"--output", "yaml"}, {"extra"}, {"--nope"},
		{"--eso-service-account", "noslash"}} {
		if code, _, _ := runCheck(t, coreOnly(), args...); code != ExitError {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	failing := func(string, string) (agent.Clients, error) { return agent.Clients{}, errors.New("no cluster") }
	if code, _, errs := runCheck(t, failing); code != ExitError || !strings.Contains(errs, "no cluster") {
		t.Fatalf("connect error: exit %d %q", code, errs)
	}
}

// A detector that fails (a contained panic) makes check exit 2 and name it,
// whatever the other detectors found: a gate must not pass on missing findings.
func TestCheckDetectorFailed(t *testing.T) {
	healthy := []runtime.Object{
		secretObj("app", "config", map[string][]byte{"A": []byte("1")}),
		checkPod("app", "web", "config"),
	}
	checkBeforeDetector = func(d string) {
		if d == "missing_keys" {
			panic("injected detector bug")
		}
	}
	defer func() { checkBeforeDetector = nil }()
	code, out, errs := runCheck(t, coreOnly(healthy...))
	if code != ExitError || !strings.Contains(errs, "missing_keys") || !strings.Contains(out, "Detectors FAILED (their findings are missing): missing_keys") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = runCheck(t, coreOnly(healthy...), "--output", "json")
	var r CheckReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if code != ExitError || r.Result != "error" || !slices.Equal(r.FailedDetectors, []string{"missing_keys"}) {
		t.Fatalf("json: exit %d, result %s, failed %v", code, r.Result, r.FailedDetectors)
	}
}

func TestCheckJSON(t *testing.T) {
	objs := []runtime.Object{checkPod("app", "worker", "flags"),
		secretObj("app", "a", map[string][]byte{"k": []byte("Zq8-json-check-value")}),
		secretObj("app", "b", map[string][]byte{"k": []byte("Zq8-json-check-value")})}
	code, out, errs := runCheck(t, coreOnly(objs...), "--output", "json", "--timeout", "30s")
	if code != ExitFinding {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "Zq8-json-check-value") {
		t.Fatal("a value in the output")
	}
	var r CheckReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Result != "fail" || r.Counts["critical"] != 1 || r.Counts["warning"] != 1 || len(r.Findings) != 2 {
		t.Fatalf("report %+v", r)
	}
	f := r.Findings[0] // critical first
	if f.Metric != "driftwatch_secret_absent" || f.Severity != SevCritical || f.Class != "Missing keys" ||
		f.Labels["secret"] != "flags" || f.Labels["namespace"] != "app" {
		t.Fatalf("first finding %+v", f)
	}
	// The typed finding carries what the detector knew: the object, the
	// evidence, the readers.
	if f.Object != (finding.Object{Kind: "Secret", Namespace: "app", Name: "flags"}) || f.Detector != "missing_keys" ||
		!strings.Contains(f.Evidence, "does not exist") || len(f.Consumers) != 1 || f.Consumers[0].Name != "worker" {
		t.Fatalf("first finding's evidence %+v", f)
	}
	if d := r.Findings[1]; d.Metric != "driftwatch_secret_duplicate_credentials" || d.Labels["secret"] != "b" || d.Labels["duplicate_of"] != "a" ||
		!strings.Contains(d.Evidence, "fingerprints as Secret a") {
		t.Fatalf("second finding %+v", d)
	}
	if !strings.Contains(out, `"severity": "critical"`) {
		t.Fatalf("severity is not rendered by name:\n%s", out)
	}
	if len(r.SkippedDetectors) == 0 {
		t.Fatal("ESO detectors should be listed as skipped without ESO")
	}
}

// The demo cluster, ESO included, through check: the migration part's findings
// are all there and the healthy namespace is not.
func TestCheckDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo cluster")
	}
	d := demo.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	connect := func(string, string) (agent.Clients, error) { return d.Clients(), nil }
	start := time.Now()
	code, out, errs := runCheck(t, connect, "--output", "json")
	if code != ExitFinding {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r CheckReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		if f.Labels["namespace"] == "healthy" {
			t.Errorf("healthy namespace in a finding: %+v", f)
		}
		if f.Labels["namespace"] == "migration" {
			got[f.Metric+" "+objectOf(f)+" "+details(f)] = true
		}
	}
	for _, want := range []string{
		"driftwatch_compare_mismatch migration/orders-db compare_with=orders-db-check hint=whitespace key=password verdict=mismatch",
		"driftwatch_externalsecret_unsafe migration/legacy-api reason=delete_with_merge",
		"driftwatch_externalsecret_unsafe migration/mailer reason=implicit_creation_policy",
		"driftwatch_secret_duplicate_credentials migration/payments-creds-copy duplicate_of=payments-creds",
		"driftwatch_secret_last_applied_data migration/smtp stale=true",
		"driftwatch_serviceaccount_workload_identity_missing migration/eso-reader provider=aws reason=annotation_missing store=aws-irsa-broken store_kind=SecretStore store_namespace=migration",
	} {
		if !got[want] {
			t.Errorf("missing finding %q", want)
		}
	}
	if len(got) != 6 {
		t.Errorf("migration findings: %d, want 6: %v", len(got), got)
	}
	t.Logf("check on the demo took %s", time.Since(start))
}

// ClassOf reads each family's catalog declaration, series by series: the
// severity follows the labels where the family refines it, families that
// restate another are not listed twice, and metrics that are not findings
// (health, objects, inventory, other programs') are never findings.
func TestClassOf(t *testing.T) {
	type l = map[string]string
	cases := []struct {
		metric string
		labels l
		class  string
		sev    Severity
		ok     bool
	}{
		{"driftwatch_secret_missing_key", l{"optional": "false"}, "Missing keys", SevCritical, true},
		{"driftwatch_secret_missing_key", l{"optional": "true"}, "Missing keys", SevWarning, true},
		{"driftwatch_secret_missing_keys", l{"optional": "false"}, "", "", false}, // the count form
		{"driftwatch_externalsecret_ready_but_short", l{}, "Ready but short", SevCritical, true},
		{"driftwatch_secret_flapping", l{}, "Flipping values", SevCritical, true},
		{"driftwatch_secret_flips_total", l{}, "Flipping values", SevInfo, true},
		{"driftwatch_workload_stale_pods", l{"change_source": "observed"}, "Stale pods", SevWarning, true},
		{"driftwatch_workload_stale_pods", l{"change_source": "managed_fields"}, "Stale pods", SevInfo, true},
		{"driftwatch_pod_stale_secret_seconds", l{"change_source": "observed"}, "", "", false}, // detail of the workload's
		{"driftwatch_last_applied_truncated", l{"cause": "truncated_patch"}, "Truncated last-applied", SevCritical, true},
		{"driftwatch_last_applied_truncated", l{"cause": "live_shorter"}, "Truncated last-applied", SevWarning, true},
		{"driftwatch_serviceaccount_workload_identity_info", l{}, "Workload identity", SevInfo, true},
		{"driftwatch_compare_ready", l{}, "", "", false},
		{"driftwatch_secret_consumer_info", l{}, "", "", false},
		{"driftwatch_externalsecret_sync_age_seconds", l{}, "", "", false},
		{"driftwatch_detector_enabled", l{}, "", "", false},
		{"driftwatch_build_info", l{}, "", "", false},
		{"driftwatch_something_new", l{}, "", "", false},
		{"go_goroutines", l{}, "", "", false},
	}
	for _, c := range cases {
		f, ok := finding.Lookup(c.metric)
		ok = ok && f.Listed()
		if ok != c.ok || ok && (f.Class != c.class || f.SeverityOf(c.labels) != c.sev) {
			t.Errorf("%s%v: got %+v %v, want %s/%s %v", c.metric, c.labels, f, ok, c.class, c.sev, c.ok)
		}
	}
}

func TestCheckTimeout(t *testing.T) {
	connect := func(string, string) (agent.Clients, error) {
		cs := fake.NewClientset()
		cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("apiserver unavailable")
		})
		return agent.Clients{Core: cs}, nil
	}
	code, out, errs := runCheck(t, connect, "--timeout", "300ms")
	if code != ExitError || !strings.Contains(errs, "did not sync within 300ms: pods") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

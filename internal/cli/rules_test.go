package cli

import (
	"bytes"
	"strings"
	"testing"
)

// agent rules renames the cluster label with the job and the runbook base,
// and refuses a label Prometheus would not accept.
func TestRulesClusterLabel(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Rules([]string{"--job", "dw", "--cluster-label", "k8s_cluster"}, &out, &errs); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	s := out.String()
	for _, want := range []string{`max by (k8s_cluster, job, namespace, secret)`, `and on (k8s_cluster, namespace, secret)`,
		`k8s_cluster=%q,job=%q`, `$labels.k8s_cluster $labels.job`, `job="dw"`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "(cluster,") || strings.Contains(s, "{cluster=%q") {
		t.Error("the default cluster label is left")
	}
	out.Reset()
	if code := Rules(nil, &out, &errs); code != ExitOK || !strings.Contains(out.String(), "max by (cluster, job, namespace, secret)") {
		t.Errorf("default: exit %d, want the shipped rules with cluster", code)
	}
	errs.Reset()
	if code := Rules([]string{"--cluster-label", "k8s-cluster"}, &out, &errs); code != ExitError || !strings.Contains(errs.String(), "k8s-cluster") {
		t.Errorf("bad label: exit %d, stderr %q", code, errs.String())
	}
}

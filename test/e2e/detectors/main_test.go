// Package detectors holds the end-to-end tests of the detectors on the real stack:
// kube-apiserver on etcd, kube-controller-manager, ESO's CRDs and the real ESO
// controller, and the agent as a process with the restricted kubeconfig.
package detectors

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOController: true, ArgoCDCRDs: true}))
}

const wait = 60 * time.Second

// findings returns the finding series of one namespace as sorted strings.
func findings(t *testing.T, a *cluster.Agent, ns string) []string {
	t.Helper()
	all, err := a.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range all {
		if !scrape.IsFinding(s) || s.Labels["namespace"] != ns {
			continue
		}
		out = append(out, s.String())
	}
	sort.Strings(out)
	return out
}

// expectFindings waits until the namespace's findings are exactly want
// (label sets and values as Series.String renders them).
func expectFindings(t *testing.T, a *cluster.Agent, ns string, want ...string) {
	t.Helper()
	sort.Strings(want)
	deadline := time.Now().Add(wait)
	var got []string
	for time.Now().Before(deadline) {
		got = findings(t, a, ns)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("findings in %s:\n got:\n  %s\nwant:\n  %s", ns, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func series(name, labels string, v float64) string {
	return fmt.Sprintf("%s{%s} %g", name, labels, v)
}

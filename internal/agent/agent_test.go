package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/demo"
)

func startDemo(t *testing.T) (base string, stop func()) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := demo.New(log)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	cfg := agent.Config{Listen: "127.0.0.1:0", Logger: log, DiscoveryInterval: time.Second,
		OnListen: func(a string) { addrc <- a }}
	cfg.Findings.Inventory = true
	a := agent.New(d.Clients(), cfg)
	// The demo's Argo CD API and Flux source-controller, as agent --demo wires them.
	var argo agent.ArgoCDConfig
	var flux agent.FluxConfig
	cleanup, err := d.ArgoCD(&argo, &flux)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	argo.PollInterval, flux.PollInterval = 200*time.Millisecond, 200*time.Millisecond
	argo.Logger, flux.Logger = log, log
	if err := a.StartArgoCD(ctx, argo); err != nil {
		t.Fatal(err)
	}
	if err := a.StartFlux(ctx, flux); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, cfg); close(done) }()
	go d.Run(ctx)
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not listen")
	}
	return base, func() { cancel(); <-done }
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := get(t, base+"/readyz"); code == 200 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("agent never became ready")
}

func series(t *testing.T, text string) map[string][]string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	out := map[string][]string{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[name] = append(out[name], strings.Join(ls, ","))
		}
		sort.Strings(out[name])
	}
	return out
}

// The demo's findings, exactly: one example per failure class, nothing for the
// healthy objects.
var wantDemo = map[string][]string{
	"driftwatch_secret_missing_key": {
		"key=DB_PASSWORD,namespace=gitops,optional=false,secret=orders-keys,source=helm",
		"key=KLARNA_KEY,namespace=gitops,optional=false,secret=payments-keys,source=argocd",
		"key=LEDGER_TOKEN,namespace=fluxapps,optional=false,secret=ledger-sync,source=flux",
		"key=SEARCH_PASS,namespace=gitops,optional=false,secret=search-keys,source=helm",
		"key=STRIPE_KEY,namespace=shop,optional=false,secret=payments-api,source=externalsecret",
		"key=STRIPE_KEY,namespace=shop,optional=true,secret=payments-api,source=pod",
		"key=TOKEN,namespace=shop,optional=false,secret=legacy-api,source=annotation",
		"key=WEBHOOK_SECRET,namespace=fluxapps,optional=false,secret=vendor-api,source=flux",
		"key=token,namespace=shop,optional=false,secret=ledger-creds,source=helm",
	},
	"driftwatch_gitops_synced_entries_missing": {
		"kind=ExternalSecret,name=ledger-sync,namespace=fluxapps,source=flux,sync_kind=Kustomization,sync_name=ledger,sync_namespace=fluxapps",
		"kind=ExternalSecret,name=payments-keys,namespace=gitops,source=argocd,sync_kind=Application,sync_name=keys-trap,sync_namespace=gitops",
		"kind=Secret,name=vendor-api,namespace=fluxapps,source=flux,sync_kind=Kustomization,sync_name=vendor,sync_namespace=fluxapps",
	},
	"driftwatch_secret_key_pending_sync": {
		"key=ROTATION_HINT,namespace=gitops,secret=cdn-token,source=argocd,sync_kind=Application,sync_name=cdn,sync_namespace=gitops",
	},
	"driftwatch_flux_never_updated": {
		"kind=Secret,kustomization=vendor,kustomization_namespace=fluxapps,name=vendor-api,namespace=fluxapps,reason=ssa_if_not_present,set_in=git",
	},
	"driftwatch_flux_ignore_trap": {
		"biting=true,kind=ExternalSecret,kustomization=ledger,namespace=fluxapps,path=/spec/data",
	},
	"driftwatch_flux_substitute_missing": {
		"kind=Secret,kustomization=notify,name=notify-vars,namespace=fluxapps,reason=absent,variable=SMTP_HOST",
	},
	"driftwatch_secret_absent": {
		"namespace=shop,secret=billing-db,source=externalsecret",
		"namespace=shop,secret=feature-flags,source=pod",
	},
	"driftwatch_externalsecret_ready_but_short": {
		"externalsecret=billing-db,namespace=shop,reason=absent,secret=billing-db",
		"externalsecret=payments-api,namespace=shop,reason=missing_keys,secret=payments-api",
	},
	"driftwatch_externalsecret_not_ready":    {"externalsecret=reports,namespace=shop,reason=SecretSyncedError"},
	"driftwatch_externalsecret_sync_overdue": {"externalsecret=reports,namespace=shop"},
	"driftwatch_secretstore_not_ready":       {"kind=SecretStore,namespace=shop,reason=InvalidProviderConfig,store=aws-broken"},
	"driftwatch_last_applied_truncated": {
		"cause=reverted_after_apply,kind=ExternalSecret,name=search-keys,namespace=gitops",
		"cause=truncated_patch,kind=ExternalSecret,name=orders-keys,namespace=gitops",
	},
	"driftwatch_argocd_ignore_list_trap": {
		"application=keys-trap,effect=rebuilds_list,group=external-secrets.io,kind=ExternalSecret,namespace=gitops,path=/spec/data/0/remoteRef,respect_ignore_differences=true",
	},
	"driftwatch_compare_mismatch": {
		"compare_with=orders-db-check,hint=whitespace,key=password,namespace=migration,secret=orders-db,verdict=mismatch",
	},
	"driftwatch_externalsecret_unsafe": {
		"externalsecret=legacy-api,namespace=migration,reason=delete_with_merge",
		"externalsecret=mailer,namespace=migration,reason=implicit_creation_policy",
	},
	"driftwatch_secret_duplicate_credentials": {"duplicate_of=payments-creds,namespace=migration,secret=payments-creds-copy"},
	"driftwatch_secret_last_applied_data":     {"namespace=migration,secret=smtp,stale=true"},
	"driftwatch_secret_short_consumer_pods": {
		"namespace=shop,secret=feature-flags,workload=cart,workload_kind=Deployment",
		"namespace=shop,secret=payments-api,workload=checkout,workload_kind=Deployment",
	},
	"driftwatch_serviceaccount_workload_identity_missing": {
		"namespace=migration,provider=aws,reason=annotation_missing,serviceaccount=eso-reader,store=aws-irsa-broken,store_kind=SecretStore,store_namespace=migration",
	},
}

// demoByActivity: classes whose demo example comes from the demo's
// activities (flips, rotations) some seconds after start.
var demoByActivity = map[string]bool{"Flipping values": true, "Stale pods": true}

// Metrics that describe objects rather than findings, and may name healthy ones.
var inventoryMetrics = map[string]bool{
	"driftwatch_externalsecret_sync_age_seconds": true,
	"driftwatch_secret_consumer_info":            true,
	"driftwatch_secret_consumer_pods":            true,
	// The last data change of Secrets read once at start, healthy or not.
	"driftwatch_secret_last_data_change_timestamp_seconds": true,
}

func TestDemoServesExactFindings(t *testing.T) {
	base, stop := startDemo(t)
	defer stop()
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	waitReady(t, base)
	// The Argo CD and Flux findings follow the pollers' first rounds, each
	// Kustomization's build in its own time: wait for every expected series
	// (a make test under load once saw the vendor Kustomization's findings
	// arrive after the others').
	var text string
	var got map[string][]string
	allWanted := func() bool {
		for name, want := range wantDemo {
			if strings.Join(got[name], "\n") != strings.Join(want, "\n") {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, text = get(t, base+"/metrics")
		got = series(t, text)
		if allWanted() || time.Now().After(deadline) {
			break
		}
	}
	// Every failure class of the catalog has its example in the demo (the
	// findings page's browser test waits for all of them).
	shown := map[string]bool{}
	for _, f := range finding.Catalog() {
		if f.Kind == finding.KindFinding && len(got[f.Name]) > 0 {
			shown[f.Class] = true
		}
	}
	for _, f := range finding.Catalog() {
		if f.Kind == finding.KindFinding && !shown[f.Class] && !demoByActivity[f.Class] {
			t.Errorf("the demo has no example of the class %q (%s)", f.Class, f.Name)
		}
	}
	for name, want := range wantDemo {
		if strings.Join(got[name], "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", name, got[name], want)
		}
	}
	if len(got["driftwatch_build_info"]) != 1 {
		t.Error("driftwatch_build_info missing")
	}
	for name, ss := range got {
		if !strings.HasPrefix(name, "driftwatch_") || inventoryMetrics[name] {
			continue
		}
		for _, s := range ss {
			if strings.Contains(s, "namespace=healthy") || strings.Contains(s, "web-config") {
				t.Errorf("healthy object in a finding: %s{%s}", name, s)
			}
		}
	}
	promtool(t, text)
}

// promtool check metrics lints the exposition (Prometheus naming conventions).
func promtool(t *testing.T, text string) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not installed: run test/tools/build.sh")
		}
		t.Skip("promtool not installed (make tools installs it)")
	}
	f := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "check", "metrics")
	in, _ := os.Open(f)
	defer in.Close()
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	if err != nil {
		var problems []string
		for _, l := range strings.Split(string(out), "\n") {
			// Go runtime metrics come from client_golang; lint only our own.
			if strings.HasPrefix(l, "driftwatch_") {
				problems = append(problems, l)
			}
		}
		if len(problems) > 0 {
			t.Fatalf("promtool check metrics:\n%s", strings.Join(problems, "\n"))
		}
	}
}

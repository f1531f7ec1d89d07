package argocd

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/gitops"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// esFiles is one Application's folder: a fake-provider SecretStore and an
// ExternalSecret whose spec.data has an entry per key. versioned gives every
// remoteRef a version (the fake provider stores the values under v1), so that
// optional field is set in Git and in live.
func esFiles(name string, versioned bool, keys ...string) string {
	ver := ""
	if versioned {
		ver = ", version: v1"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: %[1]s}
spec:
  provider:
    fake:
      data:
      - {key: db-user, value: app%[2]s}
      - {key: db-pass, value: e2e-db-pass%[2]s}
      - {key: api-token, value: e2e-api-token%[2]s}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: %[1]s}
spec:
  refreshInterval: 10s
  secretStoreRef: {name: %[1]s, kind: SecretStore}
  target: {name: %[1]s, creationPolicy: Owner}
  data:
`, name, ver)
	remote := map[string]string{"DB_USER": "db-user", "DB_PASS": "db-pass", "API_TOKEN": "api-token"}
	for _, k := range keys {
		fmt.Fprintf(&b, "  - {secretKey: %s, remoteRef: {key: %s%s}}\n", k, remote[k], ver)
	}
	return b.String()
}

const automatedRespect = `  syncPolicy:
    automated: {prune: true}
    syncOptions: [RespectIgnoreDifferences=true]
`

// The ignore-list trap, end to end, on the real Argo CD v3.2.9: Applications with
// automated sync and RespectIgnoreDifferences whose ignoreDifferences reach into
// ExternalSecret spec.data elements. A commit adds an entry:
//
//   - "pointer" (jsonPointers, /spec/data/0/remoteRef/conversionStrategy: a field
//     the ESO CRD defaults on every entry, so live always has it) and "jq"
//     (jqPathExpressions, .spec.data[].remoteRef.version: a field Git sets) are
//     bitten: the sync Succeeds, the new entry never reaches the live
//     ExternalSecret (the last-applied annotation shows the list Argo CD sent:
//     live's), the Application stays OutOfSync. driftwatch pages on the trap, the
//     key is missing against Argo CD's desired state (read from the real
//     argocd-server), and the Application is not converging.
//   - "absent" (.spec.data[].remoteRef.property: neither Git nor live has it):
//     normalizing live changes nothing, so the entry ships. driftwatch warns
//     (rebuilds_list_if_present: it cannot see live values) and never pages.
//   - "ssa" (jqPathExpressions over the three remoteRef fields the CRD
//     defaults, the ignore a server-side apply sync needs to reach Synced)
//     with ServerSideApply=true: the trap holds, and no last-applied
//     annotation exists at all. driftwatch pages on
//     the ExternalSecret lacking the entry of the revision Argo CD says it
//     delivered (driftwatch_gitops_synced_entries_missing), as it does for the
//     two client-side ones next to truncated_patch.
//   - "hidden" (.spec.data[] without RespectIgnoreDifferences): the new entry
//     leaves the normalized diff unchanged, so Argo CD reports Synced and never
//     syncs it. driftwatch warns (hides_new_entries) and the key is missing
//     against the desired state.
func TestIgnoreListTrapEndToEnd(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "trap")
	two := []string{"DB_USER", "DB_PASS"}
	three := []string{"DB_USER", "DB_PASS", "API_TOKEN"}
	rev1 := repo.Commit(t, "two keys", map[string]string{
		"pointer/es.yaml": esFiles("pointer", false, two...),
		"jq/es.yaml":      esFiles("jq", true, two...),
		"absent/es.yaml":  esFiles("absent", false, two...),
		"hidden/es.yaml":  esFiles("hidden", false, two...),
		"ssa/es.yaml":     esFiles("ssa", false, two...),
	})
	ignore := func(form, path string) string {
		return fmt.Sprintf("  ignoreDifferences:\n  - group: external-secrets.io\n    kind: ExternalSecret\n    %s: [%q]\n", form, path)
	}
	apps := map[string]string{
		"pointer": ignore("jsonPointers", "/spec/data/0/remoteRef/conversionStrategy") + automatedRespect,
		"jq":      ignore("jqPathExpressions", ".spec.data[].remoteRef.version") + automatedRespect,
		"absent":  ignore("jqPathExpressions", ".spec.data[].remoteRef.property") + automatedRespect,
		"hidden":  ignore("jqPathExpressions", ".spec.data[]") + "  syncPolicy:\n    automated: {prune: true}\n",
		// Server-side apply syncs (ESO's own CRDs exceed the last-applied
		// annotation's size, so Argo CD users sync them this way). Without a
		// last-applied annotation Argo CD diffs Git against live two-way, so
		// every field the CRD defaults on an entry shows as a difference:
		// users ignore them all, which is the trap.
		"ssa": "  ignoreDifferences:\n  - group: external-secrets.io\n    kind: ExternalSecret\n    jqPathExpressions:\n" +
			"    - .spec.data[].remoteRef.conversionStrategy\n    - .spec.data[].remoteRef.decodingStrategy\n    - .spec.data[].remoteRef.metadataPolicy\n" +
			"  syncPolicy:\n    automated: {prune: true}\n    syncOptions: [RespectIgnoreDifferences=true, ServerSideApply=true]\n",
	}
	name := func(app string) string { return "trap-" + app }
	for app, spec := range apps {
		createApp(t, c, application(name(app), repo.URL, app, ns, spec))
	}
	for app := range apps {
		s := waitApp(t, c, name(app), "Synced at "+rev1, func(s appState) bool { return syncedAt(rev1)(s) && s.Sync == "Synced" })
		t.Logf("%s after the first sync: sync=%s revision=%s phase=%s syncResult.revision=%s", name(app), s.Sync, s.Revision, s.Phase, s.SyncedRev)
		waitSecretKeys(t, c, ns, app, two...)
	}
	// The CRD defaults the field "pointer" ignores on every entry, although Git
	// does not set it: live has it, Git does not. (The defaults driftwatch's
	// detector counts on: checked on ESO's own CRD bundle.)
	_, _, es := liveES(t, c, ns, "pointer")
	data, _, _ := unstructured.NestedSlice(es.Object, "spec", "data")
	for _, e := range data {
		rr, _, _ := unstructured.NestedStringMap(e.(map[string]any), "remoteRef")
		if rr["conversionStrategy"] != "Default" || rr["decodingStrategy"] != "None" || rr["metadataPolicy"] != "None" {
			t.Fatalf("the ESO CRD did not default remoteRef: %v", rr)
		}
	}

	a := startAgent(t, c, ns, "--argocd-not-converging-threshold", "15s")
	trap := func(app, effect, respect string) map[string]string {
		return map[string]string{"application": name(app), "namespace": gitops.ArgoCDNamespace,
			"group": "external-secrets.io", "kind": "ExternalSecret", "effect": effect, "respect_ignore_differences": respect}
	}
	// Before the commit: the traps are there, none has bitten.
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("pointer", "rebuilds_list", "true"), waitAgent)
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("jq", "rebuilds_list_if_present", "true"), waitAgent)
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("absent", "rebuilds_list_if_present", "true"), waitAgent)
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("hidden", "hides_new_entries", "false"), waitAgent)

	// A commit adds API_TOKEN everywhere.
	rev2 := repo.Commit(t, "add API_TOKEN", map[string]string{
		"pointer/es.yaml": esFiles("pointer", false, three...),
		"jq/es.yaml":      esFiles("jq", true, three...),
		"absent/es.yaml":  esFiles("absent", false, three...),
		"hidden/es.yaml":  esFiles("hidden", false, three...),
		"ssa/es.yaml":     esFiles("ssa", false, three...),
	})
	refresh(t, c, name("pointer"), name("jq"), name("absent"), name("hidden"), name("ssa"))

	// Bitten: the sync to rev2 Succeeded, the entry did not ship, OutOfSync.
	for _, app := range []string{"pointer", "jq", "ssa"} {
		s := waitApp(t, c, name(app), "synced to "+rev2+" and OutOfSync", func(s appState) bool {
			return syncedAt(rev2)(s) && s.Sync == "OutOfSync"
		})
		t.Logf("%s after the commit: sync=%s revision=%s phase=%s syncResult.revision=%s message=%q",
			name(app), s.Sync, s.Revision, s.Phase, s.SyncedRev, s.Message)
		live, applied, _ := liveES(t, c, ns, app)
		if !slices.Equal(live, two) {
			t.Fatalf("%s: live spec.data %v, want the old %v (the trap)", app, live, two)
		}
		// What Argo CD's kubectl apply sent (it records it as last-applied):
		// live's list, not Git's. A server-side apply sync leaves no
		// annotation at all.
		switch {
		case app == "ssa" && applied != nil:
			t.Fatalf("ssa: a last-applied annotation (%v) after a server-side apply sync", applied)
		case app != "ssa" && !slices.Equal(applied, two):
			t.Fatalf("%s: last-applied spec.data %v, want live's %v", app, applied, two)
		}
		for _, r := range s.SyncResult {
			if r["kind"] == "ExternalSecret" {
				t.Logf("%s: syncResult.resources ExternalSecret: status=%v message=%q", app, r["status"], r["message"])
			}
		}
		t.Logf("%s: live spec.data %v, last-applied spec.data %v", app, live, applied)
		var esStatus string
		for _, r := range s.Resources {
			if r["kind"] == "ExternalSecret" {
				esStatus = fmt.Sprint(r["status"])
			}
		}
		if esStatus != "OutOfSync" {
			t.Fatalf("%s: status.resources ExternalSecret %q, want OutOfSync:\n%s", app, esStatus, s)
		}
	}
	// Not bitten: the ignored field is in neither: the entry ships.
	s := waitApp(t, c, name("absent"), "Synced at "+rev2, func(s appState) bool { return syncedAt(rev2)(s) && s.Sync == "Synced" })
	t.Logf("%s after the commit: sync=%s phase=%s syncResult.revision=%s", name("absent"), s.Sync, s.Phase, s.SyncedRev)
	if live, applied, _ := liveES(t, c, ns, "absent"); !slices.Equal(live, three) || !slices.Equal(applied, three) {
		t.Fatalf("absent: live %v, last-applied %v, want %v", live, applied, three)
	}
	waitSecretKeys(t, c, ns, "absent", three...)
	// Hidden: Synced at rev2 by comparison, no sync ran (syncResult stays rev1).
	s = waitApp(t, c, name("hidden"), "compared at "+rev2, func(s appState) bool { return s.Revision == rev2 && s.Sync == "Synced" })
	t.Logf("%s after the commit: sync=%s revision=%s phase=%s syncResult.revision=%s", name("hidden"), s.Sync, s.Revision, s.Phase, s.SyncedRev)
	if s.SyncedRev != rev1 {
		t.Fatalf("hidden: a sync ran (%s), but the diff should hide the new entry", s.SyncedRev)
	}
	if live, _, _ := liveES(t, c, ns, "hidden"); !slices.Equal(live, two) {
		t.Fatalf("hidden: live spec.data %v, want %v", live, two)
	}

	// driftwatch: the bitten traps page, the other two warn.
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("jq", "rebuilds_list", "true"), waitAgent)
	a.WaitForSeries(t, "driftwatch_argocd_ignore_list_trap", trap("ssa", "rebuilds_list", "true"), waitAgent)
	// The ExternalSecret itself lacks an entry of the revision Argo CD says
	// it delivered (issue 22): without any last-applied annotation under
	// server-side apply; next to truncated_patch under client-side apply;
	// for "hidden", Argo CD's claim is the ExternalSecret's own status,
	// Synced at rev2 (no sync ran).
	for _, app := range []string{"pointer", "jq", "ssa", "hidden"} {
		got := a.WaitForSeries(t, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": ns, "kind": "ExternalSecret",
			"name": app, "source": "argocd", "sync_kind": "Application", "sync_namespace": gitops.ArgoCDNamespace, "sync_name": name(app)}, waitAgent)
		if got.Value != 1 {
			t.Fatalf("%s: %s, want 1 missing entry", app, got)
		}
	}
	a.WaitForSeries(t, "driftwatch_last_applied_truncated", map[string]string{"namespace": ns, "name": "jq", "cause": "truncated_patch"}, waitAgent)
	expectStaysAbsent(t, a, "driftwatch_last_applied_truncated", map[string]string{"namespace": ns, "name": "ssa"}, time.Second)
	for _, app := range []string{"pointer", "jq", "ssa"} {
		a.WaitForSeries(t, "driftwatch_argocd_not_converging", map[string]string{"application": name(app), "automated": "true"}, waitAgent)
		// Argo CD's desired state (managed-resources, through the real API)
		// has API_TOKEN; the Secret ESO wrote from the live ExternalSecret lacks it.
		a.WaitForSeries(t, "driftwatch_secret_missing_key",
			map[string]string{"namespace": ns, "secret": app, "key": "API_TOKEN", "source": "argocd"}, waitAgent)
	}
	a.WaitForSeries(t, "driftwatch_secret_missing_key",
		map[string]string{"namespace": ns, "secret": "hidden", "key": "API_TOKEN", "source": "argocd"}, waitAgent)
	a.WaitForSeries(t, "driftwatch_argocd_api_up", nil, waitAgent)
	expectStaysAbsent(t, a, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": ns, "name": "absent"}, time.Second)
	for _, app := range []string{"absent", "hidden"} {
		expectStaysAbsent(t, a, "driftwatch_argocd_not_converging", map[string]string{"application": name(app)}, 2*time.Second)
		expectStaysAbsent(t, a, "driftwatch_argocd_ignore_list_trap", map[string]string{"application": name(app), "effect": "rebuilds_list"}, 2*time.Second)
	}
	expectStaysAbsent(t, a, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "absent"}, 2*time.Second)
	all, err := a.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scrape.Find(all, "driftwatch_secret_missing_key", map[string]string{"namespace": ns}) {
		t.Logf("driftwatch: %s", s)
	}
	for _, s := range scrape.Find(all, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": ns}) {
		t.Logf("driftwatch: %s", s)
	}
	for _, app := range []string{"pointer", "jq", "absent", "hidden", "ssa"} {
		for _, s := range appSeries(t, a, "driftwatch_argocd_ignore_list_trap", name(app)) {
			t.Logf("driftwatch: %s", s)
		}
		for _, s := range appSeries(t, a, "driftwatch_argocd_not_converging", name(app)) {
			t.Logf("driftwatch: %s", s)
		}
	}

	// The fix: drop the ignoreDifferences entry (server-side apply of the
	// Application without it) and sync once more: the automated sync does not
	// retry a revision it already synced successfully, so someone syncs, as
	// `argocd app sync` does. The entry ships and
	// everything clears.
	for _, app := range []string{"pointer", "jq", "ssa"} {
		fixed := automatedRespect
		if app == "ssa" {
			// The fix a server-side apply user makes: keep ignoring the
			// defaulted fields in the diff, stop carrying live into the
			// apply (no RespectIgnoreDifferences).
			fixed = strings.Split(apps["ssa"], "  syncPolicy:")[0] +
				"  syncPolicy:\n    automated: {prune: true}\n    syncOptions: [ServerSideApply=true]\n"
		}
		c.Apply(t, gitops.ArgoCDNamespace, application(name(app), repo.URL, app, ns, fixed))
		// Through argocd-server, so the operation carries the Application's
		// syncOptions (ServerSideApply=true for ssa) as argocd app sync's does.
		c.ArgoCD().Sync(t, gitops.ArgoCDNamespace, name(app), "")
		waitApp(t, c, name(app), "Synced at "+rev2, func(s appState) bool { return syncedAt(rev2)(s) && s.Sync == "Synced" })
		if live, _, _ := liveES(t, c, ns, app); !slices.Equal(live, three) {
			t.Fatalf("%s after the fix: live spec.data %v, want %v", app, live, three)
		}
		a.WaitForNoSeries(t, "driftwatch_argocd_ignore_list_trap", map[string]string{"application": name(app)}, waitAgent)
		a.WaitForNoSeries(t, "driftwatch_argocd_not_converging", map[string]string{"application": name(app)}, waitAgent)
		a.WaitForNoSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": app}, waitAgent)
		a.WaitForNoSeries(t, "driftwatch_gitops_synced_entries_missing", map[string]string{"namespace": ns, "name": app}, waitAgent)
	}
}

// Not traps: an ignored scalar (/spec/refreshInterval on an ExternalSecret) and
// Argo CD's documented example, jqPathExpressions .webhooks[]?.clientConfig.caBundle
// on a MutatingWebhookConfiguration (a built-in kind: Argo CD's patch is a
// strategic merge patch and webhooks merge by name). Argo CD ships the commit's
// new entries; driftwatch reports no trap.
func TestNotATrap(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	ctx := ctxT(t)
	repo := c.NewGitRepo(t, "notatrap")
	mwcName := ns + "-hooks"
	// Rules that match nothing that exists, failurePolicy Ignore: the
	// configuration is real but never called.
	mwc := func(names ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: %s}\nwebhooks:\n", mwcName)
		for _, n := range names {
			fmt.Fprintf(&b, `- name: %s.e2e.invalid
  clientConfig: {url: "https://127.0.0.1:1/%s"}
  rules: [{apiGroups: [e2e.invalid], apiVersions: [v1], operations: [CREATE], resources: [nothings]}]
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
`, n, n)
		}
		return b.String()
	}
	mwcGVR := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	t.Cleanup(func() { _ = c.Dynamic.Resource(mwcGVR).Delete(ctx, mwcName, metav1.DeleteOptions{}) })

	rev1 := repo.Commit(t, "one of each", map[string]string{
		"scalar/es.yaml":   esFiles("scalar", false, "DB_USER", "DB_PASS"),
		"webhook/mwc.yaml": mwc("a"),
	})
	createApp(t, c, application("notatrap-scalar", repo.URL, "scalar", ns,
		"  ignoreDifferences:\n  - {group: external-secrets.io, kind: ExternalSecret, jsonPointers: [/spec/refreshInterval]}\n"+automatedRespect))
	createApp(t, c, application("notatrap-webhook", repo.URL, "webhook", ns,
		"  ignoreDifferences:\n  - group: admissionregistration.k8s.io\n    kind: MutatingWebhookConfiguration\n    jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle']\n"+automatedRespect))
	for _, app := range []string{"notatrap-scalar", "notatrap-webhook"} {
		waitApp(t, c, app, "Synced at "+rev1, func(s appState) bool { return syncedAt(rev1)(s) && s.Sync == "Synced" })
	}
	// Something else (cert-manager's cainjector, in real life) injects the CA
	// into the live webhook: the field the ignore rule is for.
	caBundle := base64.StdEncoding.EncodeToString(c.AdminConfig.CAData)
	mergePatch(t, c, mwcGVR, "", mwcName, `{"webhooks":[{"name":"a.e2e.invalid","clientConfig":{"url":"https://127.0.0.1:1/a","caBundle":"`+caBundle+`"},"rules":[{"apiGroups":["e2e.invalid"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["nothings"]}],"failurePolicy":"Ignore","sideEffects":"None","admissionReviewVersions":["v1"]}]}`)
	// ... and someone changes the ignored scalar live.
	mergePatch(t, c, esGVR, ns, "scalar", `{"spec":{"refreshInterval":"15s"}}`)

	a := startAgent(t, c, ns, "--argocd-not-converging-threshold", "15s")
	rev2 := repo.Commit(t, "one more of each", map[string]string{
		"scalar/es.yaml":   esFiles("scalar", false, "DB_USER", "DB_PASS", "API_TOKEN"),
		"webhook/mwc.yaml": mwc("a", "b"),
	})
	refresh(t, c, "notatrap-scalar", "notatrap-webhook")
	for _, app := range []string{"notatrap-scalar", "notatrap-webhook"} {
		s := waitApp(t, c, app, "Synced at "+rev2, func(s appState) bool { return syncedAt(rev2)(s) && s.Sync == "Synced" })
		t.Logf("%s after the commit: sync=%s revision=%s phase=%s syncResult.revision=%s", app, s.Sync, s.Revision, s.Phase, s.SyncedRev)
	}
	live, applied, es := liveES(t, c, ns, "scalar")
	ri, _, _ := unstructured.NestedString(es.Object, "spec", "refreshInterval")
	if !slices.Equal(live, []string{"DB_USER", "DB_PASS", "API_TOKEN"}) || ri != "15s" {
		t.Fatalf("scalar: live spec.data %v refreshInterval %q: want the new entry shipped and live's interval kept", live, ri)
	}
	t.Logf("scalar: last-applied spec.data %v", applied)
	hooks, err := c.Dynamic.Resource(mwcGVR).Get(ctx, mwcName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ws, _, _ := unstructured.NestedSlice(hooks.Object, "webhooks")
	var names []string
	for _, w := range ws {
		wm := w.(map[string]any)
		names = append(names, fmt.Sprint(wm["name"]))
		if wm["name"] == "a.e2e.invalid" {
			if got, _, _ := unstructured.NestedString(wm, "clientConfig", "caBundle"); got != caBundle {
				t.Fatalf("webhook a lost its injected caBundle")
			}
		}
	}
	if !slices.Equal(names, []string{"a.e2e.invalid", "b.e2e.invalid"}) {
		t.Fatalf("webhooks %v: want the new one shipped next to a", names)
	}
	t.Logf("webhook: last-applied %s", hooks.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"])

	a.WaitForSeries(t, "driftwatch_argocd_api_up", nil, waitAgent)
	for _, app := range []string{"notatrap-scalar", "notatrap-webhook"} {
		expectStaysAbsent(t, a, "driftwatch_argocd_ignore_list_trap", map[string]string{"application": app}, 5*time.Second)
		expectStaysAbsent(t, a, "driftwatch_argocd_not_converging", map[string]string{"application": app}, time.Second)
	}
}

// A manual-sync Application one commit behind, the everyday GitOps state that
// paged (issue 22): the commit adds an ExternalSecret spec.data entry
// (API_TOKEN) and a key of a plain Secret (FEATURE_FLAG), a pod reads both
// Secrets, and nobody has synced yet. Argo CD v3.2.9 compares the new
// revision (OutOfSync), its last sync Succeeded at the previous one, and its
// API's target state already has the new entries. driftwatch reports, for a
// full minute of polls, no page-grade series: the two keys wait for the sync
// (driftwatch_secret_key_pending_sync, info) and the Application is behind,
// not stuck (no not_converging). Once someone syncs, the keys ship and
// nothing fires.
func TestManualSyncBehind(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "manual")
	const app = "manual-behind"
	config := func(keys ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: Secret\nmetadata: {name: manual-config}\nstringData:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: e2e-%s\n", k, strings.ToLower(k))
		}
		return b.String()
	}
	rev1 := repo.Commit(t, "two keys", map[string]string{
		"manual/es.yaml":     esFiles("manual", false, "DB_USER", "DB_PASS"),
		"manual/config.yaml": config("MODE"),
	})
	createApp(t, c, application(app, repo.URL, "manual", ns, ""))
	// A manual sync, as `argocd app sync` requests it: the operation field.
	sync := func(rev string) {
		mergePatch(t, c, gitops.ArgoGVR, gitops.ArgoCDNamespace, app,
			`{"operation":{"initiatedBy":{"username":"e2e"},"sync":{"revision":"`+rev+`"}}}`)
	}
	waitApp(t, c, app, "compared at "+rev1, func(s appState) bool { return s.Revision == rev1 && s.Sync == "OutOfSync" })
	sync(rev1)
	waitApp(t, c, app, "Synced at "+rev1, func(s appState) bool { return syncedAt(rev1)(s) && s.Sync == "Synced" })
	waitSecretKeys(t, c, ns, "manual", "DB_USER", "DB_PASS")
	// A workload reads both Secrets (it stays Pending without a kubelet,
	// which driftwatch counts as a reader): a missing key would page.
	c.Apply(t, ns, `apiVersion: v1
kind: Pod
metadata: {name: reader, labels: {app: reader}}
spec:
  containers:
  - name: app
    image: example.invalid/app:1
    envFrom:
    - secretRef: {name: manual}
    - secretRef: {name: manual-config}
`)

	rev2 := repo.Commit(t, "add API_TOKEN and FEATURE_FLAG", map[string]string{
		"manual/es.yaml":     esFiles("manual", false, "DB_USER", "DB_PASS", "API_TOKEN"),
		"manual/config.yaml": config("MODE", "FEATURE_FLAG"),
	})
	refresh(t, c, app)
	s := waitApp(t, c, app, "OutOfSync behind "+rev2, func(s appState) bool {
		return s.Revision == rev2 && s.Sync == "OutOfSync" && s.SyncedRev == rev1 && s.Phase == "Succeeded" && !s.Operation
	})
	t.Logf("%s behind: sync=%s revision=%s phase=%s syncResult.revision=%s operation=%v finishedAt=%s",
		app, s.Sync, s.Revision, s.Phase, s.SyncedRev, s.Operation, s.FinishedAt)
	// The API's target state has the new entries (what driftwatch reads).
	for _, it := range managedResources(t, c, app) {
		if it.Kind == "ExternalSecret" && !strings.Contains(it.TargetState, `"API_TOKEN"`) {
			t.Fatalf("the target state of %s lacks API_TOKEN: the test would prove nothing", it.Name)
		}
	}

	a := startAgent(t, c, ns, "--argocd-not-converging-threshold", "5s")
	pending := func(secret, key string) map[string]string {
		return map[string]string{"namespace": ns, "secret": secret, "key": key, "source": "argocd",
			"sync_kind": "Application", "sync_namespace": gitops.ArgoCDNamespace, "sync_name": app}
	}
	// A full minute of polls (the agent polls the API every 2 s here), from
	// the agent's first answered call on.
	a.WaitForSeries(t, "driftwatch_argocd_api_up", nil, waitAgent)
	for _, f := range expectNoCritical(t, a, ns, time.Minute) {
		t.Logf("driftwatch while behind: %s", f)
	}
	a.WaitForSeries(t, "driftwatch_secret_key_pending_sync", pending("manual", "API_TOKEN"), 10*time.Second)
	a.WaitForSeries(t, "driftwatch_secret_key_pending_sync", pending("manual-config", "FEATURE_FLAG"), 10*time.Second)
	expectStaysAbsent(t, a, "driftwatch_argocd_not_converging", map[string]string{"application": app}, time.Second)
	if got := getApp(t, c, app); got.Sync != "OutOfSync" || got.Revision != rev2 || got.SyncedRev != rev1 {
		t.Fatalf("the Application moved on meanwhile: %s", got)
	}

	sync(rev2)
	waitApp(t, c, app, "Synced at "+rev2, func(s appState) bool { return syncedAt(rev2)(s) && s.Sync == "Synced" })
	waitSecretKeys(t, c, ns, "manual", "DB_USER", "DB_PASS", "API_TOKEN")
	a.WaitForNoSeries(t, "driftwatch_secret_key_pending_sync", map[string]string{"namespace": ns}, waitAgent)
	expectNoCritical(t, a, ns, 10*time.Second)
	expectStaysAbsent(t, a, "driftwatch_argocd_not_converging", map[string]string{"application": app}, time.Second)
}

// Sync hooks are not desired state. Two PreSync hook Secrets (one deleted once
// it succeeded, hook-delete-policy HookSucceeded; one kept until the next sync
// recreates it, the default BeforeHookCreation) and a kept PostSync hook
// ExternalSecret (after the SecretStore it reads) that an ignoreDifferences entry with RespectIgnoreDifferences
// names. Argo CD v3.2.9 lists the hooks in status.resources (hook: true,
// requiresPruning: true) and leaves them out of the API's managed-resources.
// driftwatch must not expect the hook Secrets to exist or to hold keys, and must
// not call the hook ExternalSecret's ignore entry a trap (hooks are applied as
// Git has them, not patched from live).
func TestSyncHookNotDesiredState(t *testing.T) {
	c := cluster.Get(t)
	ns := c.NewNamespace(t)
	repo := c.NewGitRepo(t, "hooks")
	const app = "hooks"
	hook := func(name, policy string) string {
		ann := ""
		if policy != "" {
			ann = "\n    argocd.argoproj.io/hook-delete-policy: " + policy
		}
		return `apiVersion: v1
kind: Secret
metadata:
  name: ` + name + `
  annotations:
    argocd.argoproj.io/hook: PreSync` + ann + `
stringData: {TOKEN: e2e-hook-token}
`
	}
	rev := repo.Commit(t, "app with hooks", map[string]string{
		"hooks/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: app-config}
stringData: {MODE: production}
`,
		"hooks/migration.yaml": hook("migration-creds", "HookSucceeded"),
		"hooks/seed.yaml":      hook("seed-creds", ""),
		"hooks/es.yaml":        esFiles("hooks", false, "DB_USER"),
		"hooks/seed-es.yaml": `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: seed-es
  annotations: {argocd.argoproj.io/hook: PostSync}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: hooks, kind: SecretStore}
  target: {name: seed-es, creationPolicy: Owner}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db-user}}
`,
	})
	createApp(t, c, application(app, repo.URL, "hooks", ns, `  ignoreDifferences:
  - {group: external-secrets.io, kind: ExternalSecret, name: seed-es, jsonPointers: [/spec/data/0/remoteRef/conversionStrategy]}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [RespectIgnoreDifferences=true]
`))
	s := waitApp(t, c, app, "Synced at "+rev, func(s appState) bool { return syncedAt(rev)(s) && s.Sync == "Synced" })
	hooks := map[string]bool{}
	for _, r := range s.SyncResult {
		if r["hookType"] == "PreSync" && r["hookPhase"] == "Succeeded" {
			hooks[fmt.Sprint(r["name"])] = true
		}
	}
	if !hooks["migration-creds"] || !hooks["seed-creds"] {
		t.Fatalf("the sync result does not show both PreSync hooks:\n%s", s)
	}
	waitGone(t, c, ns, "migration-creds") // HookSucceeded
	s = waitApp(t, c, app, "listing the kept hooks", func(s appState) bool {
		n := 0
		for _, r := range s.Resources {
			if (r["name"] == "seed-creds" || r["name"] == "seed-es") && r["hook"] == true {
				n++
			}
		}
		return n == 2
	})
	for _, r := range s.Resources {
		t.Logf("status.resources: %v", r)
	}
	// What Argo CD's API reports as the Application's managed resources: no hook.
	for _, it := range managedResources(t, c, app) {
		t.Logf("managed-resources item: %s/%s %s hook=%v targetState=%v liveState=%v", it.Group, it.Kind, it.Name, it.Hook,
			it.TargetState != "" && it.TargetState != "null", it.LiveState != "" && it.LiveState != "null")
		if it.Hook || strings.HasPrefix(it.Name, "seed-") || it.Name == "migration-creds" {
			t.Logf("Argo CD's API lists a hook: %s (hook=%v)", it.Name, it.Hook)
		}
	}

	a := startAgent(t, c, ns)
	// The poller reads this Application's desired state (it manages a Secret and
	// an ExternalSecret) ...
	a.WaitForSeries(t, "driftwatch_argocd_requests_total", map[string]string{"code": "200"}, waitAgent)
	waitSecretKeys(t, c, ns, "hooks", "DB_USER")
	// ... and someone cleans up the kept hook: it is not desired state, so
	// nothing is missing.
	if err := c.Client.CoreV1().Secrets(ns).Delete(ctxT(t), "seed-creds", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migration-creds", "seed-creds"} {
		expectStaysAbsent(t, a, "driftwatch_secret_absent", map[string]string{"namespace": ns, "secret": name}, 8*time.Second)
		expectStaysAbsent(t, a, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": name}, time.Second)
	}
	// The hook ExternalSecret's ignore entry matches only a hook: no trap.
	expectStaysAbsent(t, a, "driftwatch_argocd_ignore_list_trap", map[string]string{"application": app}, time.Second)
	// A positive control: the desired state is used. Someone replaces
	// app-config's key; the argocd source misses it.
	mergePatch(t, c, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns, "app-config", `{"data":{"MODE":null,"OTHER":"eA=="}}`)
	a.WaitForSeries(t, "driftwatch_secret_missing_key", map[string]string{"namespace": ns, "secret": "app-config", "key": "MODE", "source": "argocd"}, waitAgent)
}

func waitGone(t *testing.T, c *cluster.Cluster, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(waitArgo)
	for time.Now().Before(deadline) {
		if _, err := c.Client.CoreV1().Secrets(ns).Get(ctxT(t), name, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("Secret %s/%s still there", ns, name)
}

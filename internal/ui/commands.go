package ui

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/alerts"
	dwcollectors "github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/internal/report"
)

// Command is a copy-ready shell command shown with a finding. Commands print
// key names, conditions and metadata, never a value (TestCommandsPrintNoValues
// holds every command the page can show to alerts.CommandLeak, the check the
// runbooks pass).
type Command struct {
	Purpose string // confirm or fix
	What    string
	Text    string
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9._/:=@%+-]+$`)

// sh quotes a word for a POSIX shell when it needs it.
func sh(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rolloutRef is the kubectl resource of a workload kind ("" when it has no
// rollout: bare pods, Jobs).
func rolloutRef(kind, name string) string {
	switch kind {
	case "Deployment":
		return "deploy/" + name
	case "StatefulSet":
		return "statefulset/" + name
	case "DaemonSet":
		return "daemonset/" + name
	}
	return ""
}

const (
	jqKeys     = `jq '.data // {} | keys'`
	jqManagers = `jq '[.metadata.managedFields[] | {manager, operation, time}]'`
	jqCond     = `jq '[.status.conditions[]? | {type, status, reason, message}]'`
)

// Commands returns the commands to confirm and to fix a finding; writers are
// the ExternalSecrets that write the finding's Secret, when known.
func Commands(f report.Finding, writers []string) []Command {
	ns := sh(f.Object.Namespace)
	name := sh(f.Object.Name)
	l := func(k string) string { return sh(f.Labels[k]) }
	var out []Command
	confirm := func(what, text string) { out = append(out, Command{Purpose: "confirm", What: what, Text: text}) }
	fix := func(what, text string) { out = append(out, Command{Purpose: "fix", What: what, Text: text}) }
	secretKeys := func(n string) {
		confirm("the keys the Secret holds (names only)", "kubectl -n "+ns+" get secret "+n+" -o json | "+jqKeys)
	}
	restarts := func() {
		for _, c := range f.Consumers {
			if r := rolloutRef(c.Kind, c.Name); r != "" {
				fix("restart "+c.Kind+" "+c.Name+" once the Secret is right (it reads it at start)",
					"kubectl -n "+ns+" rollout restart "+sh(r))
			}
		}
	}
	switch f.Metric {
	case "driftwatch_secret_missing_key":
		secretKeys(name)
		switch f.Labels["source"] {
		case "externalsecret":
			confirm("the keys its ExternalSecrets write", "kubectl -n "+ns+` get externalsecret -o json | jq -r --arg s `+name+
				` '.items[] | select((.spec.target.name // .metadata.name) == $s) | {name: .metadata.name, keys: [.spec.data[]?.secretKey]}'`)
		case "pod":
			confirm("the pods that reference the key", "kubectl -n "+ns+` get pods -o json | jq -r --arg s `+name+` --arg k `+l("key")+
				` '.items[] | .metadata.name as $p | .spec.containers[] | .env[]? | select(.valueFrom.secretKeyRef.name == $s and .valueFrom.secretKeyRef.key == $k) | "\($p) \(.name) optional=\(.valueFrom.secretKeyRef.optional // false)"'`)
		}
		confirm("who wrote the Secret's data", "kubectl -n "+ns+" get secret "+name+" --show-managed-fields -o json | "+jqManagers)
		if f.Labels["source"] == "externalsecret" {
			for _, es := range writers {
				fix("after adding the key at the provider or fixing remoteRef, refresh the ExternalSecret",
					"kubectl -n "+ns+" annotate externalsecret "+sh(es)+" force-sync=$(date +%s) --overwrite")
			}
		}
		restarts()
	case "driftwatch_secret_absent":
		confirm("the Secret does not exist", "kubectl -n "+ns+" get secret "+name)
		confirm("ExternalSecrets that should write it", "kubectl -n "+ns+` get externalsecret -o json | jq -r --arg s `+name+
			` '.items[] | select((.spec.target.name // .metadata.name) == $s) | {name: .metadata.name, ready: [.status.conditions[]? | select(.type=="Ready") | {status, reason}]}'`)
		restarts()
	case "driftwatch_externalsecret_ready_but_short", "driftwatch_externalsecret_not_ready", "driftwatch_externalsecret_sync_overdue",
		"driftwatch_externalsecret_unsafe":
		confirm("the ExternalSecret's conditions", "kubectl -n "+ns+" get externalsecret "+name+" -o json | "+jqCond)
		switch f.Metric {
		case "driftwatch_externalsecret_ready_but_short":
			confirm("the keys it renders", "kubectl -n "+ns+" get externalsecret "+name+
				` -o json | jq '{target: .spec.target, expected: [.spec.data[]?.secretKey], dataFrom: .spec.dataFrom}'`)
			if s := f.Labels["secret"]; s != "" {
				secretKeys(sh(s))
			}
		case "driftwatch_externalsecret_sync_overdue":
			confirm("when it last synced", "kubectl -n "+ns+" get externalsecret "+name+
				` -o json | jq '{refreshInterval: .spec.refreshInterval, refreshTime: .status.refreshTime}'`)
		case "driftwatch_externalsecret_unsafe":
			confirm("its target and policies", "kubectl -n "+ns+" get externalsecret "+name+` -o json | jq '.spec.target'`)
		}
		if f.Metric != "driftwatch_externalsecret_unsafe" {
			confirm("its events", "kubectl -n "+ns+" get events --field-selector involvedObject.kind=ExternalSecret,involvedObject.name="+name)
			fix("once the cause is fixed, force a refresh", "kubectl -n "+ns+" annotate externalsecret "+name+" force-sync=$(date +%s) --overwrite")
		}
	case "driftwatch_secretstore_not_ready":
		kind := strings.ToLower(f.Labels["kind"])
		nsFlag := "-n " + ns + " "
		if f.Labels["kind"] == "ClusterSecretStore" {
			nsFlag = ""
		}
		confirm("the store's provider and conditions", "kubectl "+nsFlag+"get "+sh(kind)+" "+name+
			` -o json | jq '{provider: (.spec.provider | keys), conditions: [.status.conditions[]? | {type, status, reason, message}]}'`)
	case "driftwatch_secret_flapping", "driftwatch_secret_flips_total":
		confirm("the writers fighting over the data", "kubectl -n "+ns+" get secret "+name+" --show-managed-fields -o json | "+jqManagers)
	case "driftwatch_workload_stale_pods", "driftwatch_pod_stale_secret_seconds":
		confirm("when the pods started", "kubectl -n "+ns+` get pods -o json | jq -r '.items[] | .metadata.name as $p | .status.containerStatuses[]? | "\($p) \(.name) \(.state.running.startedAt // "-")"'`)
		confirm("who changed the Secret", "kubectl -n "+ns+" get secret "+l("secret")+" --show-managed-fields -o json | "+jqManagers)
		if r := rolloutRef(f.Labels["workload_kind"], f.Labels["workload"]); r != "" {
			fix("restart the workload so its pods read the current data", "kubectl -n "+ns+" rollout restart "+sh(r))
		}
	case "driftwatch_last_applied_truncated":
		kind := sh(strings.ToLower(f.Labels["kind"]))
		confirm("the annotation's size", "kubectl -n "+ns+" get "+kind+" "+name+
			` -o json | jq '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] // "" | length'`)
		confirm("who wrote the object", "kubectl -n "+ns+" get "+kind+" "+name+" --show-managed-fields -o json | "+jqManagers)
		fix("apply it server-side from now on", "kubectl apply --server-side --force-conflicts -f <manifest>")
	case "driftwatch_secret_last_applied_data":
		confirm("the key names the annotation carries", "kubectl -n "+ns+" get secret "+name+
			` -o json | jq -r '.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] // "{}" | fromjson | {data: (.data // {} | keys), stringData: (.stringData // {} | keys)}'`)
		fix("remove the data-carrying annotation", "kubectl -n "+ns+" annotate secret "+name+" kubectl.kubernetes.io/last-applied-configuration-")
	case "driftwatch_secret_duplicate_credentials":
		confirm("compare the two Secrets key by key (verdicts only)", "kubectl driftwatch compare "+ns+"/"+name+" "+ns+"/"+l("duplicate_of"))
	case "driftwatch_compare_mismatch":
		confirm("compare the two Secrets key by key (verdicts only)", "kubectl driftwatch compare "+ns+"/"+name+" "+ns+"/"+l("compare_with"))
	case "driftwatch_argocd_ignore_list_trap":
		confirm("the Application's ignoreDifferences and sync options", "kubectl -n "+ns+" get application "+name+
			` -o json | jq '{ignore: .spec.ignoreDifferences, syncOptions: .spec.syncPolicy.syncOptions}'`)
	case "driftwatch_argocd_not_converging":
		confirm("the Application's sync state", "kubectl -n "+ns+" get application "+name+
			` -o json | jq '{sync: .status.sync | {status, revision}, operation: .status.operationState | {phase, finishedAt}}'`)
	case "driftwatch_gitops_synced_entries_missing", "driftwatch_secret_key_pending_sync":
		if f.Labels["sync_kind"] == "Application" {
			confirm("what the Application says it synced and compares", "kubectl -n "+l("sync_namespace")+" get application "+l("sync_name")+
				` -o json | jq '{phase: .status.operationState.phase, synced: .status.operationState.syncResult.revision, compared: .status.sync.revision, options: .spec.syncPolicy.syncOptions, ignore: .spec.ignoreDifferences}'`)
		}
		if f.Metric == "driftwatch_secret_key_pending_sync" {
			secretKeys(name)
			if f.Labels["sync_kind"] == "Application" {
				fix("sync the Application when the change is meant to ship", "argocd app sync "+l("sync_name")+" --app-namespace "+l("sync_namespace"))
			}
			break
		}
		kind := sh(strings.ToLower(f.Labels["kind"]))
		if f.Labels["kind"] == "ExternalSecret" {
			confirm("the entries the live ExternalSecret has (names only)", "kubectl -n "+ns+" get externalsecret "+name+" -o json | jq '[.spec.data[]?.secretKey]'")
		} else {
			secretKeys(name)
		}
		confirm("who wrote the object", "kubectl -n "+ns+" get "+kind+" "+name+" --show-managed-fields -o json | "+jqManagers)
	case "driftwatch_serviceaccount_workload_identity_missing", "driftwatch_serviceaccount_workload_identity_info":
		confirm("the ServiceAccount's identity annotations", "kubectl -n "+ns+" get serviceaccount "+name+
			` -o json | jq '.metadata.annotations // {} | with_entries(select(.key | test("eks.amazonaws.com|azure.workload.identity|iam.gke.io")))'`)
	default:
		if f.Object.Kind != "" && f.Object.Name != "" {
			confirm("the object", "kubectl -n "+ns+" get "+sh(strings.ToLower(f.Object.Kind))+" "+name)
		}
	}
	return out
}

// runbooks maps a finding family and severity to the alert whose runbook
// explains it, read from the shipped rules: the first alert of that severity
// whose expression names the family, else the first that names it.
var runbooks = sync.OnceValue(func() map[string][]alertRef {
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `json:"alert"`
				Expr   string            `json:"expr"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	out := map[string][]alertRef{}
	if err := yaml.Unmarshal(alerts.Rules, &doc); err != nil {
		return out
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				refs := out[m]
				if !slices.ContainsFunc(refs, func(a alertRef) bool { return a.Alert == r.Alert }) {
					out[m] = append(refs, alertRef{Alert: r.Alert, Severity: r.Labels["severity"]})
				}
			}
		}
	}
	return out
})

type alertRef struct{ Alert, Severity string }

var metricName = regexp.MustCompile(`\bdriftwatch_[a-z0-9_]+\b`)

// RunbookAlert names the alert whose runbook covers a finding ("" when none
// does, e.g. info-only families).
func RunbookAlert(f report.Finding) string {
	refs := runbooks()[f.Metric]
	// Alerts on a family that restates this one (the count form of missing
	// keys) cover it too.
	for _, fam := range dwcollectors.Catalog() {
		if fam.Restates == f.Metric {
			refs = append(refs, runbooks()[fam.Name]...)
		}
	}
	for _, r := range refs {
		if r.Severity == string(f.Severity) {
			return r.Alert
		}
	}
	if len(refs) > 0 {
		return refs[0].Alert
	}
	return ""
}

// defaultRunbookBase is where runbook links point unless configured: the
// shipped runbooks, as in the alert rules.
const defaultRunbookBase = alerts.RunbookBase

package collectors

// The sync_health detector: its metric families (the catalog entries), its registry
// entry and how it emits (detect/synchealth.go is the detector itself).

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

var (
	descNotReady = declare(finding.Family{
		Name:     "driftwatch_externalsecret_not_ready",
		Panel:    "ExternalSecret not Ready",
		Offline:  "needs the ExternalSecret's live status",
		Commands: notReadyCommands,
		Help:     "1 when an ExternalSecret's Ready condition is False or Unknown (one that has never synced: from 15 s after its creation, ESO's first reconcile often fails while its store is not cached yet).",
		Labels:   []string{"namespace", "externalsecret", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Sync health",
		Severity: finding.SevWarning,
	})
	descSyncAge = declare(finding.Family{
		Name:   "driftwatch_externalsecret_sync_age_seconds",
		Help:   "Seconds since the ExternalSecret's status.refreshTime.",
		Labels: []string{"namespace", "externalsecret"},
		Kind:   finding.KindObject,
		Object: &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
	})
	descSyncOverdue = declare(finding.Family{
		Name:     "driftwatch_externalsecret_sync_overdue",
		Panel:    "sync overdue",
		Offline:  "needs the ExternalSecret's live refresh time",
		Commands: overdueCommands,
		Help:     "1 when the sync age exceeds the configured multiple of refreshInterval.",
		Labels:   []string{"namespace", "externalsecret"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{Kind: "ExternalSecret", NameLabel: "externalsecret"},
		Class:    "Sync health",
		Severity: finding.SevWarning,
	})
	descStoreNotReady = declare(finding.Family{
		Name:     "driftwatch_secretstore_not_ready",
		Panel:    "store not Ready",
		Offline:  "needs the store's live status",
		Commands: storeNotReadyCommands,
		Help:     "1 when a SecretStore or ClusterSecretStore is not Ready.",
		Labels:   []string{"namespace", "kind", "store", "reason"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"SecretStore", "ClusterSecretStore"}, NameLabel: "store"},
		Class:    "Sync health",
		Severity: finding.SevWarning,
	})
	descStoreReadFailing = declare(finding.Family{
		Name:     "driftwatch_secretstore_read_failing",
		Panel:    "store read failing",
		Offline:  "needs the ExternalSecrets' live status",
		Commands: storeReadFailingCommands,
		Help: "Number of the ExternalSecrets using a SecretStore or ClusterSecretStore (spec.secretStoreRef) whose Ready is False because ESO " +
			"could not get their data from the provider, whatever the store's own condition says: ESO keeps a store Ready (reason " +
			"ValidationUnknown) while its server is unreachable, its token revoked or its certificate expired. namespace is \"\" for a ClusterSecretStore.",
		Labels:   []string{"namespace", "kind", "store"},
		Kind:     finding.KindFinding,
		Object:   &finding.ObjectRef{KindLabel: "kind", Kinds: []string{"SecretStore", "ClusterSecretStore"}, NameLabel: "store"},
		Class:    "Sync health",
		Severity: finding.SevWarning,
	})
)

func init() {
	register(detector{name: "sync_health", requires: []model.Resource{model.ResExternalSecrets}, emit: emitSyncHealth,
		families: []*prometheus.Desc{descNotReady, descSyncAge, descSyncOverdue, descStoreNotReady, descStoreReadFailing}})
}

func emitSyncHealth(e *emitter, v model.View, a model.Availability, now time.Time) {
	res := detect.SyncHealth(v, a, now, e.cfg.OverdueFactor)
	for _, n := range res.NotReady {
		if f := e.gauge(descNotReady, 1, n.Namespace, n.ExternalSecret, n.Reason); f != nil {
			f.Evidence = "Ready is not True: reason " + n.Reason + "; the target keeps its last data and stops refreshing"
			if es, ok := v.ExternalSecret(n.Namespace, n.ExternalSecret); ok {
				f.Evidence += notReadyDetail(es, now)
			}
		}
	}
	for _, s := range res.Ages {
		e.gaugeOf(descSyncAge, s.Meta, s.Age.Seconds(), []string{s.Namespace, s.ExternalSecret})
		if s.Overdue {
			if f := e.gaugeOf(descSyncOverdue, s.Meta, 1, []string{s.Namespace, s.ExternalSecret}); f != nil {
				f.Evidence = fmt.Sprintf("last refresh %s ago, more than %g × its refreshInterval", s.Age.Round(time.Second), e.cfg.OverdueFactor)
			}
		}
	}
	for _, s := range res.Stores {
		if f := e.gauge(descStoreNotReady, 1, s.Namespace, s.Kind, s.Store, s.Reason); f != nil {
			f.Evidence = s.Kind + " Ready is not True: reason " + s.Reason + "; the ExternalSecrets using it stop refreshing"
		}
	}
	for _, r := range res.ReadFails {
		if f := e.gauge(descStoreReadFailing, float64(r.Failing), r.Namespace, r.Kind, r.Store); f != nil {
			f.Evidence = storeReadEvidence(r)
		}
	}
}

// notReadyDetail names the store an ExternalSecret reads and how long ago it
// last synced.
func notReadyDetail(es *model.ExternalSecret, now time.Time) string {
	var b strings.Builder
	if es.ProviderReadFailed {
		b.WriteString("; ESO could not get its data from the provider")
	}
	if es.StoreName != "" {
		fmt.Fprintf(&b, " (%s %s)", es.StoreKind, es.StoreName)
	}
	if es.RefreshTime.IsZero() {
		b.WriteString("; it has never synced")
	} else if d := now.Sub(es.RefreshTime); d >= 0 {
		fmt.Fprintf(&b, "; last successful sync %s ago", d.Round(time.Second))
	}
	return b.String()
}

// storeReadEvidence says how many ExternalSecrets fail, since when, and what
// ESO says of the store itself.
func storeReadEvidence(r detect.StoreReadFailing) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the %d ExternalSecrets using it are not Ready: ESO could not get their data from the provider", r.Failing, r.Total)
	if r.LongestSinceSync > 0 {
		fmt.Fprintf(&b, "; the oldest last successful sync was %s ago", r.LongestSinceSync.Round(time.Second))
	}
	switch {
	case r.StoreReady == "":
		b.WriteString("; the store itself is not known to the agent")
	case r.StoreReady == "True":
		fmt.Fprintf(&b, "; ESO says the store is Ready (reason %s)", r.StoreReadyReason)
		if r.StoreReadyReason == "ValidationUnknown" {
			b.WriteString(": it could not check it, as when the server is unreachable or the credential refused")
		}
	default:
		fmt.Fprintf(&b, "; the store is not Ready either (reason %s)", r.StoreReadyReason)
	}
	b.WriteString(". The Secrets keep their last data: running pods keep working; a rotation does not arrive")
	return b.String()
}

func storeReadFailingCommands(c *finding.Commands) {
	storeNotReadyCommands(c)
	ns := ""
	if c.F.Labels["kind"] == "SecretStore" {
		ns = c.NS()
	}
	c.Confirm("its ExternalSecrets that cannot read it", "kubectl get externalsecret -A -o json | jq -r "+
		finding.Sh(`.items[] | select(.spec.secretStoreRef.name == "`+c.Name()+`" and ("`+ns+`" == "" or .metadata.namespace == "`+ns+`")) | `+
			`"\(.metadata.namespace)/\(.metadata.name) \(.status.conditions[]? | select(.type == "Ready") | .status) since \(.status.refreshTime)"`))
}

func notReadyCommands(c *finding.Commands) {
	c.ExternalSecretConditions()
	c.ExternalSecretRefresh()
}

func overdueCommands(c *finding.Commands) {
	c.ExternalSecretConditions()
	c.Confirm("when it last synced", "kubectl -n "+c.NS()+" get externalsecret "+c.Name()+
		` -o json | jq '{refreshInterval: .spec.refreshInterval, refreshTime: .status.refreshTime}'`)
	c.ExternalSecretRefresh()
}

func storeNotReadyCommands(c *finding.Commands) {
	kind := strings.ToLower(c.F.Labels["kind"])
	nsFlag := "-n " + c.NS() + " "
	if c.F.Labels["kind"] == "ClusterSecretStore" {
		nsFlag = ""
	}
	c.Confirm("the store's provider and conditions", "kubectl "+nsFlag+"get "+finding.Sh(kind)+" "+c.Name()+
		` -o json | jq '{provider: (.spec.provider | keys), conditions: [.status.conditions[]? | {type, status, reason, message}]}'`)
}

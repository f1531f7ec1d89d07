package modeltest

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// HelmRelease builds one revision of Helm release rel as the HelmRelease
// transform summarises its storage Secret: record name
// "sh.helm.release.v1.<rel>.v<rev>" (Helm's own naming, so revisions of one
// release are distinct records), the given status (deployed, superseded,
// failed, pending-upgrade, ...) and expectations; no decode error; metadata
// as Meta.
func HelmRelease(ns, rel string, rev int, status string, exps ...model.HelmExpectation) *model.HelmRelease {
	return &model.HelmRelease{ObjectMeta: Meta(ns, fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel, rev)),
		Release: rel, Revision: rev, Status: status, Expectations: exps}
}

// HelmSecret is a Secret of a release's rendered manifest with the given
// data and stringData keys (ns "" means the release's namespace).
func HelmSecret(ns, name string, keys ...string) model.HelmExpectation {
	return model.HelmExpectation{Kind: "Secret", Namespace: ns, Name: name, Keys: keys}
}

// HelmES is an ExternalSecret of a release's rendered manifest writing target,
// whose spec.data secretKeys are keys (Keys and SpecDataKeys both).
func HelmES(ns, name, target string, keys ...string) model.HelmExpectation {
	return model.HelmExpectation{Kind: "ExternalSecret", Namespace: ns, Name: name, Target: target,
		Keys: keys, SpecDataKeys: keys}
}

// AppOption changes an Argo CD Application record being built.
type AppOption func(*model.ArgoApp)

// App builds an Argo CD Application: SyncStatus Synced and nothing else (no
// ignoreDifferences, RespectIgnoreDifferences false, manual sync, no operation,
// no managed resources); metadata as Meta. Options apply after the defaults.
func App(ns, name string, opts ...AppOption) *model.ArgoApp {
	a := &model.ArgoApp{ObjectMeta: Meta(ns, name), SyncStatus: "Synced"}
	for _, o := range opts {
		o(a)
	}
	return a
}

// AppIgnore appends spec.ignoreDifferences entries.
func AppIgnore(ign ...model.IgnoreDifference) AppOption {
	return func(a *model.ArgoApp) { a.IgnoreDifferences = append(a.IgnoreDifferences, ign...) }
}

// AppRespect sets syncOptions RespectIgnoreDifferences=true.
func AppRespect() AppOption {
	return func(a *model.ArgoApp) { a.RespectIgnoreDifferences = true }
}

// AppResources appends managed resources (status.resources).
func AppResources(res ...model.ArgoResource) AppOption {
	return func(a *model.ArgoApp) { a.Resources = append(a.Resources, res...) }
}

// AppManages appends managed resources of the given group, kind pairs, each
// named "x" in namespace "shop", status "" and not a hook.
func AppManages(gks ...string) AppOption {
	return func(a *model.ArgoApp) {
		for i := 0; i+1 < len(gks); i += 2 {
			a.Resources = append(a.Resources, model.ArgoResource{Group: gks[i], Kind: gks[i+1], Namespace: "shop", Name: "x"})
		}
	}
}

// AppAutomated sets spec.syncPolicy.automated (Argo CD syncs by itself).
func AppAutomated() AppOption {
	return func(a *model.ArgoApp) { a.Automated = true }
}

// AppSync sets status.sync: its status (Synced, OutOfSync, Unknown) and the
// revision it was compared at.
func AppSync(status, revision string) AppOption {
	return func(a *model.ArgoApp) { a.SyncStatus, a.SyncRevision = status, revision }
}

// AppOperation sets the last sync operation: its phase (Succeeded, Failed,
// Error, Running, Terminating), when it finished and the revision it synced.
func AppOperation(phase string, finished time.Time, revision string) AppOption {
	return func(a *model.ArgoApp) {
		a.OperationPhase, a.OperationFinishedAt, a.OperationRevision = phase, finished, revision
	}
}

// Ignore is an ignoreDifferences entry for group/kind (any name and namespace)
// with the given JSON pointers and jq path expressions.
func Ignore(group, kind string, pointers, jq []string) model.IgnoreDifference {
	return model.IgnoreDifference{Group: group, Kind: kind, JSONPointers: pointers, JQPathExpressions: jq}
}

// Desired is the Argo CD target state of one Application, for NewStore and
// Upsert (model.Store.SetArgoDesired).
type Desired struct {
	App     model.Ref
	Objects []model.DesiredObject
}

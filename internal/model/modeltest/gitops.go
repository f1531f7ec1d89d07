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
func HelmRelease(ns, rel string, rev int, status string, exps ...model.Declared) *model.HelmRelease {
	h := &model.HelmRelease{ObjectMeta: Meta(ns, fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel, rev)),
		Release: rel, Revision: rev, Status: status, Expectations: exps}
	h.StampExpectations()
	return h
}

// HelmSecret is a Secret of a release's rendered manifest with the given
// data and stringData keys (ns "" means the release's namespace).
func HelmSecret(ns, name string, keys ...string) model.Declared {
	return model.Declared{Kind: "Secret", Namespace: ns, Name: name, Keys: keys}
}

// HelmES is an ExternalSecret of a release's rendered manifest writing target
// ("" means its name), whose spec.data secretKeys are keys, with no template
// and the CRD's default policies (Owner, Retain).
func HelmES(ns, name, target string, keys ...string) model.Declared {
	return model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: ns, Name: name, ES: ESWrites(name, target, keys...)}
}

// ESWrites is what an ExternalSecret named name without a template writes:
// target ("" means name), spec.data secretKeys keys, the CRD's default
// policies (Owner, Retain). For Helm and Argo CD desired objects.
func ESWrites(name, target string, keys ...string) *model.ESWrites {
	if target == "" {
		target = name
	}
	return &model.ESWrites{Target: target, CreationPolicy: "Owner", DeletionPolicy: "Retain",
		DataKeys: keys, HasSpecData: keys != nil}
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
// Upsert (model.Store.SetArgoDesired), read at Revision ("" means Rev): each
// object without a Revision of its own gets it.
type Desired struct {
	App      model.Ref
	Objects  []model.Declared
	Revision string
}

// Rev is the revision Desired states are read at unless they say otherwise.
const Rev = "rev-1"

// DesiredSecret is an Argo CD desired Secret with the given data keys.
func DesiredSecret(ns, name string, keys ...string) model.Declared {
	return model.Declared{Kind: "Secret", Namespace: ns, Name: name, Keys: keys}
}

// DesiredES is an Argo CD desired ExternalSecret writing target ("" means
// its name) whose spec.data secretKeys are keys (ESWrites).
func DesiredES(ns, name, target string, keys ...string) model.Declared {
	return model.Declared{Group: "external-secrets.io", Kind: "ExternalSecret", Namespace: ns, Name: name,
		ES: ESWrites(name, target, keys...)}
}

// AppDelivered makes the Application say it delivered revision rev to objs:
// status.sync Synced at rev, the last operation Succeeded at rev (finished at
// T0) with objs in its syncResult as Synced.
func AppDelivered(rev string, objs ...model.Declared) AppOption {
	return func(a *model.ArgoApp) {
		a.SyncStatus, a.SyncRevision = "Synced", rev
		a.OperationPhase, a.OperationFinishedAt, a.OperationRevision = "Succeeded", T0, rev
		for _, o := range objs {
			a.OperationSynced = append(a.OperationSynced, model.ArgoObject{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
		}
	}
}

// AppBehind makes the Application one commit behind: status.sync OutOfSync
// at current, the last operation Succeeded at synced (finished at T0) with
// objs in its syncResult; nothing applied current (a manual sync not yet run).
func AppBehind(synced, current string, objs ...model.Declared) AppOption {
	return func(a *model.ArgoApp) {
		AppDelivered(synced, objs...)(a)
		a.SyncStatus, a.SyncRevision = "OutOfSync", current
	}
}

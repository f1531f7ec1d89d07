package detect

// The GitOps sources of desired state (Argo CD and Flux): which Secrets and
// ExternalSecrets a GitOps tool's revision declares, and whether the tool
// claims to have delivered that revision. Only a delivered revision is
// evidence (expectations, the desired lists of last_applied,
// synced_entries_missing); a pending one is shown, never paged
// (pending_sync).

import (
	"slices"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Delivery says whether a GitOps tool claims to have applied the revision a
// desired state was read at.
type Delivery string

const (
	// Delivered: the tool says it applied that revision to the object. For
	// Argo CD: the last sync operation Succeeded at that revision and its
	// syncResult lists the object as Synced, or the object's own status in
	// status.resources is Synced at that revision (ApplyOutOfSyncOnly skips
	// objects already in sync). For Flux: the Kustomization claims the build
	// (FluxClaims) and its inventory lists the object (fluxGitOpsDesired).
	Delivered Delivery = "delivered"
	// Pending: that revision is the one the tool compares now and it has not
	// applied it to the object: a manual sync not yet run, a sync window,
	// automated sync off, a sync still running or failed.
	Pending Delivery = "pending"
	// Unjudged: the revision the state belongs to is unknown (it moved while
	// it was read), the tool's object is not in the model or is being
	// deleted: neither evidence nor pending.
	Unjudged Delivery = ""
)

// SyncObject is the GitOps object that delivers desired state: an Argo CD
// Application or a Flux Kustomization.
type SyncObject struct {
	Kind      string
	Namespace string
	Name      string
}

// syncLess orders sync objects by namespace, name, then kind (an Application
// and a Kustomization may share a namespace and name).
func syncLess(a, b SyncObject) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Kind < b.Kind
}

// Desired is one Secret or ExternalSecret of a GitOps tool's desired state.
type Desired struct {
	Source Source
	Sync   SyncObject
	Object model.Declared
	// Delivery of Object.Revision.
	Delivery Delivery
}

// GitOpsDesired lists the desired objects of every GitOps source, sorted by
// source, sync object, then namespace, kind and name, with their delivery; on
// a scoped view (model.View.InNamespace) only those in its namespace, whose
// target Secrets are there too. The list is built once per model read
// (model.View.DesiredMemo) and indexed by namespace: each namespace's
// evaluation used to build the whole cluster's list again, O(namespaces ×
// desired objects) after every GitOps change. The list and the slices inside
// are shared: do not modify them.
func GitOpsDesired(v model.View) []Desired {
	g := v.DesiredMemo("detect.GitOpsDesired", func(all model.View) any {
		return indexDesired(gitOpsDesired(all))
	}).(*desiredIndex)
	if ns, scoped := v.Scope(); scoped {
		return g.byNS[ns]
	}
	return g.all
}

// desiredIndex is the cluster's desired list and its parts by namespace (each
// in the list's order).
type desiredIndex struct {
	all  []Desired
	byNS map[string][]Desired
}

func indexDesired(all []Desired) *desiredIndex {
	all = slices.Clip(all)
	g := &desiredIndex{all: all, byNS: map[string][]Desired{}}
	for _, d := range all {
		g.byNS[d.Object.Namespace] = append(g.byNS[d.Object.Namespace], d)
	}
	for ns, l := range g.byNS {
		g.byNS[ns] = slices.Clip(l)
	}
	return g
}

// gitOpsDesired builds GitOpsDesired's list for the whole cluster.
func gitOpsDesired(v model.View) []Desired {
	var out []Desired
	for _, d := range v.ArgoDesiredAll() {
		app, ok := v.App(d.Source.Namespace, d.Source.Name)
		var del Delivery
		if ok {
			del = argoDelivery(app, &d)
		}
		out = append(out, Desired{Source: SourceArgoCD, Sync: SyncObject{Kind: d.Source.Kind, Namespace: d.Source.Namespace, Name: d.Source.Name},
			Object: d, Delivery: del})
	}
	return append(out, fluxGitOpsDesired(v)...)
}

// argoDelivery judges an Argo CD desired object against its Application.
// An Application being deleted expects nothing: Argo CD's resources finalizer
// deletes what it manages first (controller/appcontroller.go
// finalizeApplicationDeletion, v3.2.9).
func argoDelivery(app *model.ArgoApp, d *model.Declared) Delivery {
	if app.Deleting || app.DecodeErr != "" || d.Revision == "" {
		return Unjudged
	}
	o := model.ArgoObject{Group: d.Group, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}
	if app.OperationPhase == "Succeeded" && app.OperationRevisionKey() == d.Revision && app.Applied(o) {
		return Delivered
	}
	if app.SyncRevisionKey() != d.Revision {
		return Unjudged
	}
	if app.ResourceStatus(o) == "Synced" {
		return Delivered
	}
	return Pending
}

// Target is what a desired object expects of a Secret: the Secret, the keys
// it must hold (none: only that it exists).
type Target struct {
	Namespace, Secret string
	Keys              []string
}

// DesiredTarget returns what desired object d expects of a Secret, and false
// when it expects nothing (an ExternalSecret ESO does not write, or whose
// target ESO left without its keys on purpose: esExpects).
func DesiredTarget(v model.View, d *model.Declared) (Target, bool) {
	switch {
	case d.Kind == "Secret":
		return Target{Namespace: d.Namespace, Secret: d.Name, Keys: d.Keys}, true
	case d.Kind == "ExternalSecret" && d.ES != nil:
		if !esExpects(v, d.Namespace, d.Name, d.ES) {
			return Target{}, false
		}
		return Target{Namespace: d.Namespace, Secret: d.ES.Target, Keys: d.ES.WrittenKeys()}, true
	}
	return Target{}, false
}

// esExpects reports whether an ExternalSecret ns/name that writes w (live, or
// desired by Helm or a GitOps tool) expects its target to hold what it writes:
// not with creationPolicy None (ESO writes nothing), and not when the live
// ExternalSecret of that name is being deleted or says ESO emptied the target
// on purpose (ESEmptiedOnPurpose).
func esExpects(v model.View, ns, name string, w *model.ESWrites) bool {
	if !w.WritesTarget() {
		return false
	}
	if e, ok := v.ExternalSecret(ns, name); ok && (e.Deleting || ESEmptiedOnPurpose(v, e)) {
		return false
	}
	return true
}

// ESEmptiedOnPurpose reports whether ESO left e's target without e's keys as
// configured, because the provider returned nothing (ESO v0.20.4
// externalsecret_controller.go, an empty provider result):
//   - deletionPolicy Delete: ESO deleted the target and reports Ready=True with
//     reason SecretDeleted;
//   - deletionPolicy Merge: ESO removed the keys it manages and reports
//     Ready=True; the target holds none of the keys e writes.
//
// A single key the provider lacks is another matter: with Delete or Merge ESO
// skips it silently (Ready=True, the target short of that key), the purest
// Ready-but-short case, still reported. A workload that reads the emptied
// Secret is reported through its own source (pod).
func ESEmptiedOnPurpose(v model.View, e *model.ExternalSecret) bool {
	if e.Ready.Status != "True" {
		return false
	}
	switch e.DeletionPolicy {
	case "Delete":
		return e.Ready.Reason == "SecretDeleted"
	case "Merge":
		keys := e.WrittenKeys()
		s, ok := v.Secret(e.Namespace, e.Target)
		if len(keys) == 0 || !ok {
			return false
		}
		for _, k := range keys {
			if s.Keys.Has(k) {
				return false
			}
		}
		return true
	}
	return false
}

// gitopsExpectations are the expectations of the GitOps sources (source
// "argocd"): the Secrets and ExternalSecrets of a delivered revision. A
// desired Secret expects its data/stringData keys; a desired ExternalSecret
// expects the keys it writes into its target. An object without keys expects
// only that the Secret exists. Consumers are the sync objects.
func gitopsExpectations(v model.View, desired []Desired, add func(ns, secret, key string, src Source, c Consumer)) {
	for i := range desired {
		d := &desired[i]
		if d.Delivery != Delivered {
			continue
		}
		t, ok := DesiredTarget(v, &d.Object)
		if !ok {
			continue
		}
		c := Consumer{Kind: d.Sync.Kind, Name: d.Sync.Name}
		if len(t.Keys) == 0 {
			add(t.Namespace, t.Secret, "", d.Source, c)
		}
		for _, key := range t.Keys {
			if key != "" {
				add(t.Namespace, t.Secret, key, d.Source, c)
			}
		}
	}
}

// sourceAvailable reports whether the resource a GitOps source's sync objects
// come from is available (listed, permitted): Argo CD Applications, Flux
// Kustomizations. A detector needs only the sources it can judge.
func (d *Desired) sourceAvailable(avail model.Availability) bool {
	switch d.Source {
	case SourceArgoCD:
		return avail[model.ResApplications]
	case SourceFlux:
		return avail[model.ResKustomizations]
	}
	return false
}

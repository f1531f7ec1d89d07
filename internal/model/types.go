// Package model holds driftwatch's value-free view of the cluster: the records the
// informer transforms produce and the indexes the detectors query. Nothing in this
// package ever holds a Secret value: keys are reduced to a byte length and a keyed
// fingerprint before a record is built.
package model

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref names a namespaced object.
type Ref struct {
	Namespace string
	Name      string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// KeyInfo is what driftwatch keeps of one Secret key: never the value.
type KeyInfo struct {
	Len int
	// FP is a truncated HMAC-SHA256 of the value under a per-process random key.
	FP Fingerprint
	// TrimFP is the fingerprint of the value with surrounding white space removed and
	// CRLF folded to LF; it lets a comparison say "differs only in white space".
	TrimFP Fingerprint
}

// ManagedField summarises one metadata.managedFields entry.
type ManagedField struct {
	Manager   string
	Operation string // Apply or Update
	Time      time.Time
	// OwnsData is true when the entry owns f:data or f:stringData (Secrets) or
	// f:spec (other kinds): a data write, not a metadata-only edit.
	OwnsData bool
	// Subresource is "status" for status writes.
	Subresource string
}

// OwnerRef is the part of an ownerReference driftwatch uses.
type OwnerRef struct {
	APIVersion string
	Kind       string
	Name       string
	UID        string
	Controller bool
}

// LastApplied is a value-free summary of a kubectl.kubernetes.io/last-applied-configuration
// annotation. The annotation may belong to another kind than the object carrying it
// (ESO copies an ExternalSecret's annotation onto its target Secret), so Kind says
// what it describes.
type LastApplied struct {
	APIVersion string
	Kind       string
	Name       string
	// Secrets: the key names of data and stringData, and fingerprints of the values
	// the annotation carries (so "does the copy differ from live" can be answered).
	DataKeys []string
	DataFPs  FPList
	// ExternalSecrets: spec.data entries' secretKey values, in order.
	SpecDataKeys []string
	// HasSpecData is true when spec.data is present at all.
	HasSpecData bool
	// CreationPolicySet: spec.target.creationPolicy was present in what was applied.
	CreationPolicySet bool
	// HoldsList: the manager that wrote the annotation still holds the newest
	// write of the list it describes (a Secret's data keys, an ExternalSecret's
	// spec.data), so the annotation is evidence about that list. After another
	// manager writes it (kubectl patch or edit do not update the annotation;
	// server-side apply, Helm, Argo CD, a controller) it is frozen history.
	HoldsList bool
	// HoldsCreationPolicy: the same for spec.target.creationPolicy.
	HoldsCreationPolicy bool
	// Size is the annotation's length in bytes.
	Size int
	// Err is a parse failure ("" when none), including an annotation over the
	// parse limit (internal/parse.MaxLastAppliedBytes).
	Err string
}

// Secret is the value-free record of a Secret.
type Secret struct {
	ObjectMeta
	Type string
	Keys KeySet
	// Owners are the ownerReferences.
	Owners []OwnerRef
	// Managers summarises managedFields.
	Managers    []ManagedField
	LastApplied *LastApplied
	// ExpectedKeys is the parsed driftwatch.io/expected-keys annotation.
	ExpectedKeys    []string
	ExpectedKeysErr string
	// Oversized is set when the object exceeded a size limit and was summarised partially.
	Oversized bool
}

// SecretVia says how a container reads a Secret.
type SecretVia string

const (
	ViaEnv          SecretVia = "env"            // env[].valueFrom.secretKeyRef
	ViaEnvFrom      SecretVia = "envFrom"        // envFrom[].secretRef
	ViaVolume       SecretVia = "volume"         // secret volume, refreshed by the kubelet
	ViaVolumeSub    SecretVia = "volume_subpath" // secret volume mounted with subPath: read once
	ViaProjected    SecretVia = "projected"      // projected volume source
	ViaProjectedSub SecretVia = "projected_subpath"
	// ViaImagePull: spec.imagePullSecrets (the ServiceAccount's, copied in by
	// admission when the pod names none). The kubelet reads it to pull images:
	// a reader (inventory, readers of a finding, the Secret's page), never an
	// expectation, since a missing pull Secret fails loudly in the kubelet.
	ViaImagePull SecretVia = "imagePullSecret"
)

// Expects is false for the ways of reading a Secret that state no expectation
// of it (imagePullSecrets): such a use makes its pod a reader of the Secret,
// and never a source of a missing-key, absent or stale-pod finding.
func (v SecretVia) Expects() bool { return v != ViaImagePull }

// ReadOnce is true for the ways of reading a Secret that capture its data only at
// container start.
func (v SecretVia) ReadOnce() bool {
	switch v {
	case ViaEnv, ViaEnvFrom, ViaVolumeSub, ViaProjectedSub:
		return true
	}
	return false
}

// SecretUse is one reference from a pod to a Secret.
type SecretUse struct {
	Secret    string
	Key       string // "" when the whole Secret is referenced (envFrom, volume without items)
	Optional  bool
	Via       SecretVia
	Container string // "" for pod-level uses (volumes not mounted, imagePullSecrets)
}

// ContainerKind distinguishes init, regular and ephemeral containers.
type ContainerKind string

const (
	ContainerRegular   ContainerKind = "container"
	ContainerInit      ContainerKind = "init"
	ContainerEphemeral ContainerKind = "ephemeral"
)

// Container is the part of a container's spec and status driftwatch keeps.
type Container struct {
	Name      string
	Kind      ContainerKind
	Running   bool
	StartedAt time.Time // state.running.startedAt; zero when unknown
}

// Workload names the controller that owns a pod (a Deployment through its
// ReplicaSet, a StatefulSet, a DaemonSet, a Job, a CronJob through its Job), or the
// pod itself when it has no owner.
type Workload struct {
	Kind string
	Name string
}

// Pod is the value-free record of a Pod: its Secret references, start times, SA and
// owner workload.
type Pod struct {
	ObjectMeta
	Phase string
	// Terminating is set once metadata.deletionTimestamp is: the pod is
	// shutting down and starts no container again, so what it reads no longer
	// matters (a pod on an unreachable node stays so until the node is gone).
	Terminating    bool
	ServiceAccount string
	StartTime      time.Time
	Workload       Workload
	Containers     []Container
	Uses           []SecretUse
	// ReloadAnnotations lists the Reloader/Wave annotation names present (info only).
	ReloadAnnotations []string
}

// ServiceAccount keeps the workload-identity annotations of a ServiceAccount.
type ServiceAccount struct {
	ObjectMeta
}

// Condition is a status condition.
type Condition struct {
	Status             string // True, False, Unknown, or "" when absent
	Reason             string
	LastTransitionTime time.Time
}

// ESWrites is what an ExternalSecret's spec says about the Secret it writes:
// its target, policies and the keys ESO writes there. Live ExternalSecrets,
// the ExternalSecrets of Helm release manifests and of Argo CD target states all
// get it from the one decoder (internal/eso: Decode, DecodeJSON, Writes), so the
// rule of what ESO writes (WrittenKeys) is applied the same way to each.
type ESWrites struct {
	// Target is spec.target.name, defaulted to the ExternalSecret's name.
	Target string
	// CreationPolicy and DeletionPolicy are spec.target's, defaulted as the
	// CRD defaults them (Owner, Retain).
	CreationPolicy string
	DeletionPolicy string
	// DataKeys are spec.data[].secretKey, in order ("" for an entry without one).
	DataKeys []string
	// HasSpecData: spec.data is present (possibly empty).
	HasSpecData bool
	// TemplateKeys are the keys spec.target.template renders that can be named
	// from the spec (template.data keys and templateFrom configMap/secret items
	// rendered as Values into Data), sorted and deduplicated.
	TemplateKeys []string
	// TemplateMergePolicy is spec.target.template.mergePolicy (Replace or Merge).
	TemplateMergePolicy string
	// HasTemplate is set when spec.target.template is present.
	HasTemplate bool
	// TemplateRendersData: the template has data or templateFrom entries, so with
	// mergePolicy Replace (the default) ESO writes only what it renders.
	TemplateRendersData bool
	// TemplateOpen says why the template renders keys the spec cannot name: ""
	// when it does not, else TemplateOpenLiteral or TemplateOpenKeysAndValues.
	TemplateOpen string
	// DataFrom counts spec.dataFrom entries; DataFromFind those using find.
	DataFrom     int
	DataFromFind int
	// DataFromGenerators counts spec.dataFrom entries whose source is a
	// generator (sourceRef.generatorRef): values made, not read from a store.
	DataFromGenerators int
}

// Why a template renders keys its spec cannot name (ESWrites.TemplateOpen).
const (
	// TemplateOpenLiteral: a templateFrom literal, a template whose output is
	// the key/value map.
	TemplateOpenLiteral = "literal"
	// TemplateOpenKeysAndValues: a templateFrom configMap/secret item with
	// templateAs KeysAndValues, whose keys come from the referenced object's
	// content.
	TemplateOpenKeysAndValues = "keys_and_values"
)

// WritesTarget reports whether ESO writes the target at all: with
// creationPolicy None it creates and updates nothing (ESO v0.20
// externalsecret_controller.go: "secret creation skipped due to
// CreationPolicy=None") and still reports Ready=True SecretSynced.
func (w *ESWrites) WritesTarget() bool { return w.CreationPolicy != "None" }

// RendersOnly reports whether ESO writes only what the template renders: a
// template that renders data (template.data or templateFrom entries) with the
// default mergePolicy Replace. ESO v0.20.4 ApplyTemplate
// (externalsecret_controller_template.go): the provider's data is copied when
// there is no template, when mergePolicy is Merge, or when the template has
// neither data nor templateFrom.
func (w *ESWrites) RendersOnly() bool {
	return w.HasTemplate && (w.TemplateRendersData || len(w.TemplateKeys) > 0) && w.TemplateMergePolicy != "Merge"
}

// WrittenKeys returns the keys ESO writes into the target that the spec names
// (sorted): only the rendered keys when RendersOnly, else spec.data keys and
// rendered keys. Keys a template renders from content (TemplateOpen) or that
// dataFrom brings are not nameable and not included.
func (w *ESWrites) WrittenKeys() []string {
	if w.RendersOnly() {
		return append([]string(nil), w.TemplateKeys...)
	}
	// unionSorted(DataKeys without "", TemplateKeys) in one allocation: it
	// runs for every ExternalSecret at every evaluation.
	out := make([]string, 0, len(w.DataKeys)+len(w.TemplateKeys))
	for _, k := range w.DataKeys {
		if k != "" {
			out = append(out, k)
		}
	}
	out = append(out, w.TemplateKeys...)
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ExternalSecret is the value-free record of an ESO ExternalSecret.
type ExternalSecret struct {
	ObjectMeta
	APIVersion string
	// Deleting: metadata.deletionTimestamp is set (a finalizer, or a foreground
	// delete waiting for the Secret it owns): it expects nothing any more.
	Deleting bool
	ESWrites
	StoreKind string // SecretStore or ClusterSecretStore
	StoreName string
	// RefreshInterval is spec.refreshInterval; RefreshIntervalSet is false when absent.
	RefreshInterval    time.Duration
	RefreshIntervalSet bool
	// RefreshPolicy is spec.refreshPolicy: "" or Periodic refresh every interval;
	// CreatedOnce and OnChange do not.
	RefreshPolicy string
	Ready         Condition
	// ProviderReadFailed: Ready is False because ESO could not get the data
	// from the provider (eso.ProviderReadFailed; the message itself is not kept).
	ProviderReadFailed bool
	RefreshTime        time.Time
	// Generation is metadata.generation; SyncedVersion is
	// status.syncedResourceVersion, what ESO last synced:
	// "<generation>-<hash of labels and annotations>" (SyncPending).
	Generation    int64
	SyncedVersion string
	Managers      []ManagedField
	LastApplied   *LastApplied
	// CreationPolicyApplied says whether what users server-side applied set
	// spec.target.creationPolicy: "set", "unset", or "" when unknowable (no Apply
	// entry owns the spec; Update entries include CRD defaults and prove nothing).
	CreationPolicyApplied string
	ExpectedKeys          []string
	ExpectedKeysErr       string
	DecodeErr             string
}

// SecretStore is the value-free record of a SecretStore or ClusterSecretStore.
type SecretStore struct {
	ObjectMeta
	APIVersion string
	StoreKind  string // SecretStore or ClusterSecretStore
	Provider   string // aws, azurekv, gcpsm, vault, fake, ...
	// AuthSA is the ServiceAccount the provider authenticates as, when the store names one.
	AuthSA *Ref
	// AuthType: "workload_identity", "jwt", "ambient", "static", "" (unknown)
	AuthType string
	// ClientIDSet: Azure clientId given in the store itself.
	ClientIDSet bool
	Ready       Condition
	DecodeErr   string
}

// StampExpectations sets the Source and Revision of the release's
// expectations: this release, at its revision.
func (h *HelmRelease) StampExpectations() {
	src := SourceRef{Kind: SourceHelmRelease, Namespace: h.Namespace, Name: h.Release}
	rev := strconv.Itoa(h.Revision)
	for i := range h.Expectations {
		h.Expectations[i].Source, h.Expectations[i].Revision = src, rev
	}
}

// HelmRelease is a deployed Helm release's value-free summary.
type HelmRelease struct {
	ObjectMeta
	Release      string
	Revision     int
	Status       string
	Expectations []Declared
	DecodeErr    string
}

// IgnoreDifference is one spec.ignoreDifferences entry of an Argo CD Application.
type IgnoreDifference struct {
	Group             string
	Kind              string
	Name              string
	Namespace         string
	JSONPointers      []string
	JQPathExpressions []string
	// ManagedFieldsManagers: fields these field managers own in live (and Git
	// changes) are ignored.
	ManagedFieldsManagers []string
}

// ArgoApp is the value-free record of an Argo CD Application.
type ArgoApp struct {
	ObjectMeta
	IgnoreDifferences        []IgnoreDifference
	RespectIgnoreDifferences bool
	// Automated: spec.syncPolicy.automated is set (and, in Argo CD v3, not
	// enabled: false). SelfHeal: automated.selfHeal.
	Automated bool
	SelfHeal  bool
	// SyncStatus is status.sync.status (Synced, OutOfSync, Unknown), compared
	// against SyncRevision (status.sync.revision) or, for multi-source
	// Applications, SyncRevisions (status.sync.revisions).
	SyncStatus    string
	SyncRevision  string
	SyncRevisions []string
	// The last operation: phase (Succeeded, Failed, Error, Running,
	// Terminating), when it finished, and the revision(s) it synced
	// (status.operationState.syncResult.revision / revisions).
	OperationPhase      string
	OperationFinishedAt time.Time
	OperationRevision   string
	OperationRevisions  []string
	// OperationSynced lists the Secrets and ExternalSecrets the last sync
	// operation applied (status.operationState.syncResult.resources entries
	// with status Synced that are not hooks): with a Succeeded phase, Argo CD's
	// claim to have delivered them at OperationRevision(s).
	OperationSynced      []ArgoObject
	DestinationNamespace string
	Resources            []ArgoResource
	DecodeErr            string
	// Deleting: metadata.deletionTimestamp is set. Argo CD's resources
	// finalizer deletes what the Application manages first: its target state
	// is no longer an expectation.
	Deleting bool
}

// ArgoObject names an object an Application manages.
type ArgoObject struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// SyncRevisionKey is the revision the Application compares (status.sync):
// its revision, or for a multi-source Application its revisions joined by
// ",". "" when unknown.
func (a *ArgoApp) SyncRevisionKey() string { return revisionKey(a.SyncRevision, a.SyncRevisions) }

// OperationRevisionKey is the revision the last sync operation applied, in
// the form of SyncRevisionKey.
func (a *ArgoApp) OperationRevisionKey() string {
	return revisionKey(a.OperationRevision, a.OperationRevisions)
}

func revisionKey(rev string, revs []string) string {
	if len(revs) > 0 {
		return strings.Join(revs, ",")
	}
	return rev
}

// ResourceStatus is the sync status (Synced, OutOfSync, ...) of a managed
// object in status.resources, "" when it is not listed.
func (a *ArgoApp) ResourceStatus(o ArgoObject) string {
	for _, r := range a.Resources {
		if r.Group == o.Group && r.Kind == o.Kind && r.Namespace == o.Namespace && r.Name == o.Name && !r.Hook {
			return r.Status
		}
	}
	return ""
}

// Applied reports whether the last sync operation applied object o
// (OperationSynced), whatever its phase.
func (a *ArgoApp) Applied(o ArgoObject) bool { return slices.Contains(a.OperationSynced, o) }

// ArgoResource is an entry of an Application's status.resources.
type ArgoResource struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
	Status    string
	// Hook: a sync hook, not desired state.
	Hook bool
}

// Namespace is what driftwatch keeps of a namespace: its name and the
// driftwatch.io/ignore annotation.
type Namespace struct {
	ObjectMeta
}

// Every record is a runtime.Object so the informer machinery (keys, DeltaFIFO,
// DeletedFinalStateUnknown) handles it like any API object.
var (
	_ runtime.Object = (*Secret)(nil)
	_ runtime.Object = (*Pod)(nil)
	_ runtime.Object = (*ServiceAccount)(nil)
	_ runtime.Object = (*ExternalSecret)(nil)
	_ runtime.Object = (*SecretStore)(nil)
	_ runtime.Object = (*HelmRelease)(nil)
	_ runtime.Object = (*ArgoApp)(nil)
	_ runtime.Object = (*Namespace)(nil)
)

func (*Secret) GetObjectKind() schema.ObjectKind         { return schema.EmptyObjectKind }
func (*Pod) GetObjectKind() schema.ObjectKind            { return schema.EmptyObjectKind }
func (*ServiceAccount) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (*ExternalSecret) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (*SecretStore) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }
func (*HelmRelease) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }
func (*ArgoApp) GetObjectKind() schema.ObjectKind        { return schema.EmptyObjectKind }
func (*Namespace) GetObjectKind() schema.ObjectKind      { return schema.EmptyObjectKind }

// Records are immutable once built: a "deep copy" is the same pointer.
func (s *Secret) DeepCopyObject() runtime.Object         { return s }
func (p *Pod) DeepCopyObject() runtime.Object            { return p }
func (s *ServiceAccount) DeepCopyObject() runtime.Object { return s }
func (e *ExternalSecret) DeepCopyObject() runtime.Object { return e }
func (s *SecretStore) DeepCopyObject() runtime.Object    { return s }
func (h *HelmRelease) DeepCopyObject() runtime.Object    { return h }
func (a *ArgoApp) DeepCopyObject() runtime.Object        { return a }
func (n *Namespace) DeepCopyObject() runtime.Object      { return n }

// SyncPending reports whether ESO has not synced e's current spec yet: its
// status.syncedResourceVersion ("<generation>-<hash>", written after each
// successful sync) names another metadata.generation, so the status, Ready
// included, still speaks of the spec before the last change. False when either
// is unknown (an ExternalSecret ESO never synced, a version of another form).
func (e *ExternalSecret) SyncPending() bool {
	n, ok := e.syncedGeneration()
	return ok && e.Generation > 0 && n != e.Generation
}

// syncedGeneration is the generation status.syncedResourceVersion names.
func (e *ExternalSecret) syncedGeneration() (int64, bool) {
	g, _, ok := strings.Cut(e.SyncedVersion, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(g, 10, 64)
	return n, err == nil
}

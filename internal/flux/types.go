// Package flux holds small local mirrors of Flux's Kustomization and source
// types (only the fields driftwatch reads), the parser of kustomize-controller's
// inventory IDs, the artifact fetcher and the value-free reader of the
// manifests a Kustomization applies (build.go).
//
// Like internal/argocd and internal/eso it imports nothing of Flux: the
// controllers' API modules need controller-runtime and newer Go (see
// docs/dependencies.md).
package flux

import (
	"encoding/hex"
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

const (
	Group         = "kustomize.toolkit.fluxcd.io"
	Version       = "v1"
	SourceGroup   = "source.toolkit.fluxcd.io"
	SourceVersion = "v1"
)

// The annotations kustomize-controller reads on the objects it applies
// (kustomize-controller internal/controller/kustomization_controller.go,
// fluxcd/pkg/ssa shouldSkipApply).
const (
	// AnnotationSSA: IfNotPresent (create once, never patch: skipped when the
	// object exists; read on the object in Git), Ignore (never applied, not
	// even created; read on the object in Git or in the cluster), Merge (no
	// metadata cleanup).
	AnnotationSSA = "kustomize.toolkit.fluxcd.io/ssa"
	// AnnotationReconcile: disabled skips the object like ssa: Ignore (in Git or
	// in the cluster).
	AnnotationReconcile = "kustomize.toolkit.fluxcd.io/reconcile"
	// AnnotationSubstitute: disabled (annotation or label) leaves the object out
	// of postBuild substitution.
	AnnotationSubstitute = "kustomize.toolkit.fluxcd.io/substitute"

	SSAIfNotPresent   = "IfNotPresent"
	SSAIgnore         = "Ignore"
	ReconcileDisabled = "disabled"
)

// Why kustomize-controller skips an object (SkipReason), as the
// driftwatch_flux_never_updated reason label spells it.
const (
	SkipSSAIfNotPresent   = "ssa_if_not_present"
	SkipSSAIgnore         = "ssa_ignore"
	SkipReconcileDisabled = "reconcile_disabled"
)

// SkipReason says why kustomize-controller's apply skips an object, from one
// side's metadata ("" when it does not), matching its selectors as
// fluxcd/pkg/ssa does (shouldSkipApply, utils.AnyInMetadata): a label or an
// annotation of the key, its value compared case-insensitively.
// kustomize-controller v1.9.6 sets ExclusionSelector {reconcile: disabled,
// ssa: Ignore}, read on the object in Git and on the live object, and
// IfNotPresentSelector {ssa: IfNotPresent}, read on the object in Git only
// (and skipping it only once it exists). desired says which side the
// metadata is from.
func SkipReason(labels, annotations map[string]string, desired bool) string {
	has := func(key, val string) bool {
		return (labels[key] != "" && strings.EqualFold(labels[key], val)) ||
			(annotations[key] != "" && strings.EqualFold(annotations[key], val))
	}
	switch {
	case has(AnnotationSSA, SSAIgnore):
		return SkipSSAIgnore
	case has(AnnotationReconcile, ReconcileDisabled):
		return SkipReconcileDisabled
	case desired && has(AnnotationSSA, SSAIfNotPresent):
		return SkipSSAIfNotPresent
	}
	return ""
}

// Kustomization is kustomize.toolkit.fluxcd.io/v1 Kustomization.
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KustomizationSpec   `json:"spec,omitempty"`
	Status            KustomizationStatus `json:"status,omitempty"`
}

type KustomizationSpec struct {
	SourceRef       CrossNamespaceSourceReference `json:"sourceRef"`
	Path            string                        `json:"path,omitempty"`
	TargetNamespace string                        `json:"targetNamespace,omitempty"`
	NamePrefix      string                        `json:"namePrefix,omitempty"`
	NameSuffix      string                        `json:"nameSuffix,omitempty"`
	Suspend         bool                          `json:"suspend,omitempty"`
	Force           bool                          `json:"force,omitempty"`
	Ignore          []IgnoreRule                  `json:"ignore,omitempty"`
	PostBuild       *PostBuild                    `json:"postBuild,omitempty"`
	Patches         []Patch                       `json:"patches,omitempty"`
	Components      []string                      `json:"components,omitempty"`
	CommonMetadata  *CommonMetadata               `json:"commonMetadata,omitempty"`
	Decryption      *Decryption                   `json:"decryption,omitempty"`
}

type CrossNamespaceSourceReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// DefaultNamespace is the namespace Flux installs its controllers in.
const DefaultNamespace = "flux-system"

// SourceKinds are the kinds of source whose artifact a Kustomization may
// apply (kustomize-controller v1.9.6: the sourceRef kind enum).
var SourceKinds = []string{"GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"}

// buildFields are the spec fields fluxcd/pkg/kustomize's generator, its build
// and postBuild read, and commonMetadata, which kustomize-controller sets on
// every object it applies: a change to any of them changes what is applied.
var buildFields = []string{"path", "targetNamespace", "namePrefix", "nameSuffix", "patches", "patchesStrategicMerge",
	"patchesJson6902", "components", "ignoreMissingComponents", "images", "buildMetadata", "postBuild", "decryption", "commonMetadata"}

// BuildKey is a keyed fingerprint of the build-relevant fields of a
// Kustomization's spec: it changes when they do, and it says nothing of them
// (the patches and inline variables may hold values; the key never leaves the
// process).
func BuildKey(fp *model.Fingerprinter, spec map[string]any) string {
	sub := map[string]any{}
	for _, f := range buildFields {
		if v, ok := spec[f]; ok {
			sub[f] = v
		}
	}
	b, err := json.Marshal(sub) // map keys sorted
	if err != nil {
		return "unencodable"
	}
	sum := fp.Sum(b)
	clear(b)
	return hex.EncodeToString(sum[:])
}

// IgnoreRule is one spec.ignore entry: JSON pointers kustomize-controller leaves
// out of drift detection and, for objects that exist, of the apply.
type IgnoreRule struct {
	Paths  []string  `json:"paths"`
	Target *Selector `json:"target,omitempty"`
}

// Selector is fluxcd/pkg/apis/kustomize Selector.
type Selector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
}

type PostBuild struct {
	Substitute         map[string]string     `json:"substitute,omitempty"`
	SubstituteFrom     []SubstituteReference `json:"substituteFrom,omitempty"`
	SubstituteStrategy string                `json:"substituteStrategy,omitempty"`
}

type SubstituteReference struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Optional bool   `json:"optional,omitempty"`
}

// Patch is a spec.patches entry (the patch text itself is not read).
type Patch struct {
	Target *Selector `json:"target,omitempty"`
}

type CommonMetadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

type Decryption struct {
	Provider string `json:"provider"`
}

type KustomizationStatus struct {
	ObservedGeneration    int64              `json:"observedGeneration,omitempty"`
	Conditions            []metav1.Condition `json:"conditions,omitempty"`
	LastAppliedRevision   string             `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string             `json:"lastAttemptedRevision,omitempty"`
	Inventory             *ResourceInventory `json:"inventory,omitempty"`
}

// ResourceInventory is status.inventory: what the last apply applied (or
// skipped: objects kustomize-controller skips stay in it).
type ResourceInventory struct {
	Entries []ResourceRef `json:"entries"`
}

type ResourceRef struct {
	// ID is cli-utils' ObjMetadata string: <namespace>_<name>_<group>_<kind>.
	ID      string `json:"id"`
	Version string `json:"v"`
}

// Source is the status of a source.toolkit.fluxcd.io/v1 GitRepository (and of
// an OCIRepository, a Bucket or an ExternalArtifact: the same status.artifact;
// an ExternalArtifact has no spec.suspend).
type Source struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SourceSpec   `json:"spec,omitempty"`
	Status            SourceStatus `json:"status,omitempty"`
}

type SourceSpec struct {
	Suspend bool `json:"suspend,omitempty"`
}

type SourceStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Artifact           *Artifact          `json:"artifact,omitempty"`
}

// Artifact is fluxcd/pkg/apis/meta Artifact: a tarball source-controller
// serves over HTTP.
type Artifact struct {
	Path     string `json:"path"`
	URL      string `json:"url"`
	Revision string `json:"revision"`
	// Digest is "<algorithm>:<hex>" of the tarball (sha256 by default).
	Digest string `json:"digest,omitempty"`
	Size   *int64 `json:"size,omitempty"`
}

// ObjMetadata is one inventory entry, parsed.
type ObjMetadata struct {
	Namespace, Name, Group, Kind string
}

// ParseInventoryID parses cli-utils' ObjMetadata string
// "<namespace>_<name>_<group>_<kind>" (namespace empty for cluster-scoped
// objects, group empty for the core group) as cli-utils' ParseObjMetadata
// does: the namespace up to the first "_", the kind after the last, the group
// before it, the name in between with "__" (a transcoded ":") restored.
func ParseInventoryID(id string) (ObjMetadata, bool) {
	i := strings.Index(id, "_")
	if i < 0 {
		return ObjMetadata{}, false
	}
	ns, rest := id[:i], id[i+1:]
	j := strings.LastIndex(rest, "_")
	if j < 0 {
		return ObjMetadata{}, false
	}
	kind, rest := rest[j+1:], rest[:j]
	k := strings.LastIndex(rest, "_")
	if k < 0 {
		return ObjMetadata{}, false
	}
	group, name := rest[k+1:], strings.ReplaceAll(rest[:k], "__", ":")
	if name == "" || kind == "" {
		return ObjMetadata{}, false
	}
	return ObjMetadata{Namespace: ns, Name: name, Group: group, Kind: kind}, true
}

package model

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// Resources of Flux.
const (
	ResKustomizations  Resource = "kustomizations"
	ResGitRepositories Resource = "gitrepositories"
	ResOCIRepositories Resource = "ocirepositories"
	ResBuckets         Resource = "buckets"
	// ResExternalArtifacts: source.toolkit.fluxcd.io/v1 ExternalArtifact, the
	// artifacts of controllers other than source-controller (source-watcher's
	// ArtifactGenerators).
	ResExternalArtifacts Resource = "externalartifacts"
)

// FluxKustomization is the value-free record of a Flux Kustomization
// (kustomize.toolkit.fluxcd.io/v1).
type FluxKustomization struct {
	ObjectMeta
	Generation, ObservedGeneration int64
	// SourceKind/Namespace/Name: spec.sourceRef (namespace defaulted to the
	// Kustomization's).
	SourceKind, SourceNamespace, SourceName string
	Path, TargetNamespace                   string
	Suspend                                 bool
	// Ready is the Ready condition; Reconciling says whether the controller
	// is at it (condition Reconciling=True).
	Ready       Condition
	Reconciling bool
	// LastAppliedRevision: the source revision the last successful apply
	// applied ("main@sha1:<sha>"); LastAttemptedRevision: the last tried.
	LastAppliedRevision, LastAttemptedRevision string
	// Inventory: the Secrets and ExternalSecrets of status.inventory (the
	// objects the last apply applied or skipped).
	Inventory []FluxObjRef
	Ignore    []FluxIgnoreRule
	// SubstituteFrom: postBuild.substituteFrom; InlineVars: postBuild.substitute's
	// variable names; SubstituteAlways: substituteStrategy Always.
	SubstituteFrom   []FluxSubstituteRef
	InlineVars       []string
	SubstituteAlways bool
	HasPostBuild     bool
	// BuildKey is a keyed fingerprint of the spec fields Flux's build reads
	// (internal/flux.BuildKey): the spec itself (patches, inline variables)
	// is not kept; the poller reads it from the apiserver when this changes.
	BuildKey  string
	Deleting  bool
	DecodeErr string
}

// FluxObjRef names an object of a Kustomization's inventory.
type FluxObjRef struct{ Group, Kind, Namespace, Name string }

// FluxIgnoreRule is a spec.ignore entry.
type FluxIgnoreRule struct {
	Paths []string
	// Target: the selector (HasTarget false: every object of the Kustomization).
	HasTarget                                                                bool
	Group, Version, Kind, Name, Namespace, AnnotationSelector, LabelSelector string
}

// FluxSubstituteRef is a postBuild.substituteFrom entry.
type FluxSubstituteRef struct {
	Kind, Name string
	Optional   bool
}

// FluxSource is the value-free record of a Flux source (GitRepository,
// OCIRepository, Bucket, ExternalArtifact): readiness and the artifact it
// serves.
type FluxSource struct {
	ObjectMeta
	Kind                           string
	Generation, ObservedGeneration int64
	Ready                          Condition
	Suspend                        bool
	ArtifactURL                    string
	ArtifactRevision               string
	ArtifactDigest                 string
	DecodeErr                      string
}

// FluxDesired is the value-free build of a Kustomization's source at an
// artifact revision (internal/flux.Build), as the poller read it, or why there
// is none.
type FluxDesired struct {
	Kustomization Ref
	// Revision and Digest: the artifact built; BuildKey: the
	// Kustomization's build-relevant spec it was built for.
	Revision, Digest, BuildKey string
	Objects                    []Declared
	Vars                       []FluxVarUse
	// Unjudged, when set, is why nothing is expected from this Kustomization
	// (internal/flux Unjudged*: no_artifact, fetch_failed, build_failed...),
	// Detail a value-free explanation; Objects is then empty.
	Unjudged, Detail string
	// Since: when the Kustomization became unjudged for this reason.
	Since time.Time
}

// Judged reports whether the build is one to judge by.
func (d *FluxDesired) Judged() bool { return d != nil && d.Unjudged == "" }

// FluxVarUse is a postBuild variable an object of the build uses without a
// default.
type FluxVarUse struct{ Var, Kind, Namespace, Name string }

var (
	_ kruntime.Object = (*FluxKustomization)(nil)
	_ kruntime.Object = (*FluxSource)(nil)
)

func (*FluxKustomization) GetObjectKind() schema.ObjectKind  { return schema.EmptyObjectKind }
func (*FluxSource) GetObjectKind() schema.ObjectKind         { return schema.EmptyObjectKind }
func (k *FluxKustomization) DeepCopyObject() kruntime.Object { return k }
func (s *FluxSource) DeepCopyObject() kruntime.Object        { return s }

// fluxState holds the Flux records (Kustomizations, sources); their builds are
// in the one desired-state store (desired.go). Like it, it has its own lock
// and generation (a field of the Store, written under its own lock); the
// store's read lock and this lock are never held in the opposite order, and
// the two are never held together.
type fluxState struct {
	mu      sync.RWMutex
	ks      map[Ref]*FluxKustomization
	sources map[srcKey]*FluxSource
	gen     uint64
}

type srcKey struct{ kind, ns, name string }

func newFluxState() *fluxState {
	return &fluxState{ks: map[Ref]*FluxKustomization{}, sources: map[srcKey]*FluxSource{}}
}

// flux is the Store's Flux state (made with the Store).
func (s *Store) flux() *fluxState { return s.fluxState }

// UpsertKustomization records a Kustomization.
func (s *Store) UpsertKustomization(k *FluxKustomization) {
	f := s.flux()
	f.mu.Lock()
	defer f.mu.Unlock()
	key := refOf(k.Namespace, k.Name)
	if !sameButVersion(f.ks[key], k) { // a status write at every reconcile that changed nothing kept
		f.gen++
	}
	f.ks[key] = k
}

// DeleteKustomization forgets a Kustomization and its build.
func (s *Store) DeleteKustomization(ns, name string) {
	f := s.flux()
	f.mu.Lock()
	delete(f.ks, refOf(ns, name))
	f.gen++
	f.mu.Unlock()
	r := refOf(ns, name)
	s.forgetFlux(&r)
}

// UpsertFluxSource records a source.
func (s *Store) UpsertFluxSource(src *FluxSource) {
	f := s.flux()
	f.mu.Lock()
	defer f.mu.Unlock()
	key := srcKey{src.Kind, src.Namespace, src.Name}
	if !sameButVersion(f.sources[key], src) {
		f.gen++
	}
	f.sources[key] = src
}

// DeleteFluxSource forgets a source.
func (s *Store) DeleteFluxSource(kind, ns, name string) {
	f := s.flux()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sources, srcKey{kind, ns, name})
	f.gen++
}

// ClearFlux drops every record of a Flux resource (its CRD went away).
func (s *Store) ClearFlux(r Resource) {
	if r == ResKustomizations {
		s.forgetFlux(nil)
	}
	f := s.flux()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r {
	case ResKustomizations:
		f.ks = map[Ref]*FluxKustomization{}
	default:
		for k := range f.sources {
			if sourceResource(k.kind) == r {
				delete(f.sources, k)
			}
		}
	}
	f.gen++
}

// FluxSourceResource is the resource of a Flux source kind ("" for a kind
// driftwatch does not read).
func FluxSourceResource(kind string) Resource { return sourceResource(kind) }

func sourceResource(kind string) Resource {
	switch kind {
	case "GitRepository":
		return ResGitRepositories
	case "OCIRepository":
		return ResOCIRepositories
	case "Bucket":
		return ResBuckets
	case "ExternalArtifact":
		return ResExternalArtifacts
	}
	return ""
}

func (f *fluxState) generation() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.gen
}

// FluxGeneration changes with every Flux record or build written.
func (v View) FluxGeneration() uint64 { return v.s.flux().generation() }

// fluxMeta is View.Meta for a Kustomization or a Flux source.
func (v View) fluxMeta(kind, ns, name string) (*ObjectMeta, bool) {
	f := v.s.flux()
	f.mu.RLock()
	defer f.mu.RUnlock()
	if kind == "Kustomization" {
		if k := f.ks[refOf(ns, name)]; k != nil {
			return &k.ObjectMeta, true
		}
		return nil, false
	}
	if src := f.sources[srcKey{kind, ns, name}]; src != nil {
		return &src.ObjectMeta, true
	}
	return nil, false
}

// Kustomizations returns every Kustomization, sorted by namespace and name.
func (v View) Kustomizations() []*FluxKustomization {
	f := v.s.flux()
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*FluxKustomization, 0, len(f.ks))
	for _, k := range f.ks {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// FluxSourceOf returns a Kustomization's source record.
func (v View) FluxSourceOf(k *FluxKustomization) (*FluxSource, bool) {
	f := v.s.flux()
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.sources[srcKey{k.SourceKind, k.SourceNamespace, k.SourceName}]
	return s, ok
}

// Manages reports whether the Kustomization's inventory holds the object.
func (k *FluxKustomization) Manages(group, kind, ns, name string) bool {
	for _, r := range k.Inventory {
		if r.Kind == kind && r.Group == group && r.Namespace == ns && r.Name == name {
			return true
		}
	}
	return false
}

// fluxCounts adds the Flux records to a Counts map.
func (v View) fluxCounts(out map[Resource]int) {
	f := v.s.flux()
	f.mu.RLock()
	defer f.mu.RUnlock()
	out[ResKustomizations] = len(f.ks)
	for k := range f.sources {
		out[sourceResource(k.kind)]++
	}
}

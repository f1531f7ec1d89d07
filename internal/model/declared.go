package model

// Declared is an object a source declares: a Secret or an ExternalSecret of a
// Helm release's manifest, of an Argo CD Application's target state, or of a
// Flux Kustomization's build. One record for the three, read by one parser
// (internal/parse.Declared) from the manifest document, key names only: the
// document itself is parsed and dropped.
type Declared struct {
	Group     string // "" for a Secret, external-secrets.io for an ExternalSecret
	Kind      string // Secret or ExternalSecret
	Namespace string
	Name      string

	// Keys: a Secret's key names (data and stringData), sorted and unique.
	Keys []string
	// ES: what an ExternalSecret writes (nil for a Secret).
	ES *ESWrites

	// Labels and Annotations (last-applied left out, bounded): read for Flux
	// builds, whose apply reads them (kustomize-controller's ssa markers).
	Labels, Annotations map[string]string
	// SOPS: the object carries a top-level "sops" stanza (an encrypted
	// Secret: key names are in clear, values are not).
	SOPS bool
	// Undetermined says why driftwatch cannot tell this object's name or keys
	// (a Flux postBuild.substituteFrom variable in them, a name hashed from
	// SOPS-encrypted content): its keys are no expectation.
	Undetermined string

	// Source is what declares the object, Revision the revision of the source
	// it was read at: a Helm release (revision number), an Argo CD Application
	// (its sync revision, or revisions joined by ","; "" when it moved while
	// the target state was read) or a Flux Kustomization (the artifact
	// revision built). Set by whoever records the declarations.
	Source   SourceRef
	Revision string
}

// Kinds of SourceRef.
const (
	SourceHelmRelease   = "HelmRelease" // a Helm release (its release Secret), not Flux's HelmRelease
	SourceApplication   = "Application"
	SourceKustomization = "Kustomization"
)

// SourceRef names what declares an object: a Helm release, an Argo CD
// Application or a Flux Kustomization (not a Flux source such as a
// GitRepository: that serves the artifact a Kustomization builds).
type SourceRef struct {
	Kind      string // SourceHelmRelease, SourceApplication or SourceKustomization
	Namespace string
	Name      string
}

// Ref is the source's namespace and name.
func (s SourceRef) Ref() Ref { return Ref{Namespace: s.Namespace, Name: s.Name} }

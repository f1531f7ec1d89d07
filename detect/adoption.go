package detect

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Adoption-safety reasons (label values of driftwatch_externalsecret_unsafe).
const (
	UnsafeImplicitCreationPolicy = "implicit_creation_policy"
	UnsafeOwnerOverExisting      = "owner_over_existing"
	UnsafeDeleteWithMerge        = "delete_with_merge"
	UnsafeUnexpectedKeys         = "unexpected_keys"
)

// Unsafe is an ExternalSecret whose configuration can destroy or leak data.
type Unsafe struct {
	Namespace      string
	ExternalSecret string
	Reason         string
	// Keys counts the unexpected keys (UnsafeUnexpectedKeys only).
	Keys int
}

// UnsafeExternalSecrets applies the adoption-safety rules to every ExternalSecret.
// It needs ExternalSecrets; the rules that read the target Secret also need Secrets.
//
//   - implicit_creation_policy: what the user applied did not set
//     spec.target.creationPolicy, so the CRD defaulted it to Owner (deleting the
//     ExternalSecret garbage-collects the Secret). Read from a last-applied
//     annotation of kind ExternalSecret (client-side apply) while its writer
//     still holds spec.target.creationPolicy (model.LastApplied), else from the
//     server-side Apply managedFields entries (model.CreationPolicyApplied).
//     Objects only created or updated (Update entries also own CRD defaults) are
//     not judged (never a guess).
//   - owner_over_existing: creationPolicy Owner and a target Secret that ESO has
//     not (yet) taken over — no controller ownerReference to this ExternalSecret —
//     while it existed before the ExternalSecret (created strictly earlier, both
//     timestamps known) or a manager other than ESO owns its data. ESO takes such
//     a Secret over, deletes the keys it does not manage, and it is then
//     garbage-collected with the ExternalSecret. Once ESO owns it (the
//     ownerReference is set) the takeover is done and legitimate: not reported.
//   - delete_with_merge: deletionPolicy Delete with creationPolicy Merge: a key
//     that disappears from the store is deleted from a Secret ESO does not own.
//   - unexpected_keys: the ExternalSecret uses dataFrom.find (whatever matches in
//     the store lands in the Secret) and its target holds keys outside a declared
//     complete key set. Only the driftwatch.io/expected-keys annotation (on the
//     Secret, or on an ExternalSecret writing it) declares a complete set: the keys
//     that spec.data, templates, pods, Helm or Argo CD name are a lower bound
//     (an ExternalSecret that combines data with dataFrom.find, a Secret read by
//     envFrom plus one secretKeyRef: the keys the find brings are expected by
//     design). Keys any source names are expected too. dataFrom.extract is not
//     judged (it reads one named remote secret, a deliberate choice). With a
//     template that renders data and mergePolicy Replace, only the rendered keys
//     reach the Secret: not judged.
//
// An ExternalSecret with creationPolicy None writes nothing: only
// implicit_creation_policy could apply, and None is explicit.
func UnsafeExternalSecrets(v model.View, avail model.Availability) []Unsafe {
	if !avail[model.ResExternalSecrets] {
		return nil
	}
	withSecrets := avail[model.ResSecrets]
	var named map[model.Ref]map[string]bool
	var declared map[model.Ref]bool
	var out []Unsafe
	for _, e := range v.ExternalSecrets() {
		if e.DecodeErr != "" {
			continue
		}
		add := func(reason string, n int) {
			out = append(out, Unsafe{Namespace: e.Namespace, ExternalSecret: e.Name, Reason: reason, Keys: n})
		}
		if la := e.LastApplied; la != nil && la.Err == "" && la.Kind == "ExternalSecret" && la.HoldsCreationPolicy {
			if !la.CreationPolicySet {
				add(UnsafeImplicitCreationPolicy, 0)
			}
		} else if e.CreationPolicyApplied == "unset" {
			add(UnsafeImplicitCreationPolicy, 0)
		}
		var target *model.Secret
		if withSecrets {
			target, _ = v.Secret(e.Namespace, e.Target)
		}
		if !e.WritesTarget() {
			continue
		}
		if e.CreationPolicy == "Owner" && target != nil && ownerOverExisting(e, target) {
			add(UnsafeOwnerOverExisting, 0)
		}
		if e.DeletionPolicy == "Delete" && e.CreationPolicy == "Merge" {
			add(UnsafeDeleteWithMerge, 0)
		}
		if target != nil && e.DataFromFind > 0 && !e.RendersOnly() { // the one template rule (model.ESWrites)
			if named == nil {
				named, declared = namedKeys(v, avail)
			}
			want := named[ref(e.Namespace, e.Target)]
			if declared[ref(e.Namespace, e.Target)] {
				n := 0
				for k := range target.Keys.All() {
					if !want[k] {
						n++
					}
				}
				if n > 0 {
					add(UnsafeUnexpectedKeys, n)
				}
			}
		}
	}
	return out
}

// esoManager reports whether a managedFields manager is ESO's: the controller
// ("external-secrets", and any manager of that prefix) or its per-ExternalSecret
// target writer
// ("externalsecrets.external-secrets.io/<name>").
func esoManager(m string) bool {
	return strings.HasPrefix(m, "external-secrets") || strings.HasPrefix(m, "externalsecrets.external-secrets.io/")
}

func ownerOverExisting(e *model.ExternalSecret, s *model.Secret) bool {
	for _, o := range s.Owners {
		if o.Controller && o.Kind == "ExternalSecret" && o.Name == e.Name {
			return false // taken over: ESO owns it now
		}
	}
	ct, et := s.CreationTimestamp.Time, e.CreationTimestamp.Time
	if !ct.IsZero() && !et.IsZero() && ct.Before(et) {
		return true
	}
	for _, m := range s.Managers {
		if m.OwnsData && m.Subresource == "" && !esoManager(m.Manager) {
			return true
		}
	}
	return false
}

// namedKeys maps each Secret to the keys some expectation source names, and says
// which Secrets have a declared complete key set (a driftwatch.io/expected-keys
// annotation on the Secret or on an ExternalSecret writing it).
func namedKeys(v model.View, avail model.Availability) (map[model.Ref]map[string]bool, map[model.Ref]bool) {
	out := map[model.Ref]map[string]bool{}
	declared := map[model.Ref]bool{}
	put := func(r model.Ref, keys ...string) {
		for _, k := range keys {
			if k == "" {
				continue
			}
			m := out[r]
			if m == nil {
				m = map[string]bool{}
				out[r] = m
			}
			m[k] = true
		}
	}
	for _, x := range Expectations(v, avail) {
		put(ref(x.Namespace, x.Secret), x.Key)
	}
	// Expectations skips ExternalSecrets ESO has not reconciled yet; their spec
	// still names keys.
	for _, e := range v.ExternalSecrets() {
		r := ref(e.Namespace, e.Target)
		put(r, e.WrittenKeys()...)
		put(r, e.ExpectedKeys...)
		if len(e.ExpectedKeys) > 0 {
			declared[r] = true
		}
	}
	for _, s := range v.Secrets() {
		if len(s.ExpectedKeys) > 0 {
			declared[ref(s.Namespace, s.Name)] = true
		}
	}
	return out, declared
}

// Duplicate is a Secret whose data is identical to another's in its namespace.
type Duplicate struct {
	Namespace   string
	Secret      string
	DuplicateOf string
}

// controlled reports whether a controller owns s (an ownerReference with
// controller: true).
func controlled(s *model.Secret) bool {
	for _, o := range s.Owners {
		if o.Controller {
			return true
		}
	}
	return false
}

// skipDuplicateType lists Secret types whose identical copies are expected.
func skipDuplicateType(t string) bool {
	return t == "kubernetes.io/service-account-token" || t == "helm.sh/release.v1"
}

// DuplicateCredentials finds Secrets in one namespace holding identical data: the
// same key set with the same lengths and fingerprints (a forgotten check copy).
// Empty Secrets, service-account tokens and Helm release Secrets are skipped, as
// is any Secret with a key whose fingerprint is unknown. Each group of identical
// Secrets is reported once per member but the first in lexical order, as a
// duplicate of that first one (n-1 series for n copies, never both directions).
// Pairs declared with driftwatch.io/compare-with (on either Secret, or on an
// ExternalSecret writing one of them) are in the middle of a migration and are
// not reported. A Secret with a controller ownerReference is its controller's
// output for its owner (prometheus-operator's web-config and tls-assets
// Secrets of two Prometheus objects in one namespace are identical; two
// ExternalSecrets may read one remote key): it is never reported, and when
// a class holds one, the others are reported as duplicates of the first such.
func DuplicateCredentials(v model.View, avail model.Availability) []Duplicate {
	if !avail[model.ResSecrets] {
		return nil
	}
	pair := func(ns, a, b string) [3]string {
		if a > b {
			a, b = b, a
		}
		return [3]string{ns, a, b}
	}
	// The declared pairs, read only when some Secrets hold equal data.
	var compared map[[3]string]bool
	isCompared := func(ns, a, b string) bool {
		if compared == nil {
			compared = map[[3]string]bool{}
			for _, p := range ComparePairs(v, avail) {
				compared[pair(p.Namespace, p.Live, p.Store)] = true
			}
		}
		return compared[pair(ns, a, b)]
	}
	// Sort by namespace and an order-independent hash of the key names,
	// lengths and fingerprints (stable: v.Secrets() order, lexical, within a
	// run), then split each run of equal hashes into classes of exactly equal
	// data (a hash collision never makes a finding). No per-Secret string or
	// map entry is built: almost every Secret is alone in its run.
	type cand struct {
		h uint64
		n int
		s *model.Secret
	}
	secrets := v.Secrets()
	cands := make([]cand, 0, len(secrets))
	for _, s := range secrets {
		if s.Keys.Len() == 0 || skipDuplicateType(s.Type) {
			continue
		}
		h, ok := dataHash(s)
		if !ok {
			continue
		}
		cands = append(cands, cand{h, s.Keys.Len(), s})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := strings.Compare(a.s.Namespace, b.s.Namespace); c != 0 {
			return c
		}
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	var out []Duplicate
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j].h == cands[i].h && cands[j].n == cands[i].n && cands[j].s.Namespace == cands[i].s.Namespace {
			j++
		}
		run := cands[i:j]
		i = j
		if len(run) < 2 {
			continue
		}
		var classes [][]*model.Secret
		for _, x := range run {
			placed := false
			for k, c := range classes {
				if sameData(c[0], x.s) {
					classes[k] = append(c, x.s)
					placed = true
					break
				}
			}
			if !placed {
				classes = append(classes, []*model.Secret{x.s})
			}
		}
		for _, c := range classes {
			if len(c) < 2 {
				continue
			}
			// c is in v.Secrets() order: c[0] is the first in lexical order.
			// A Secret a controller owns is its owner's output, not a
			// copy: it is never reported, and the first of them is the
			// one the others copy.
			orig := c[0]
			for _, s := range c {
				if controlled(s) {
					orig = s
					break
				}
			}
			ns := orig.Namespace
			for _, s := range c {
				if s == orig || controlled(s) || isCompared(ns, orig.Name, s.Name) {
					continue
				}
				out = append(out, Duplicate{Namespace: ns, Secret: s.Name, DuplicateOf: orig.Name})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Secret < b.Secret
	})
	return out
}

var dataHashSeed = maphash.MakeSeed()

// dataHash is an in-process-only, order-independent hash of a Secret's key names,
// lengths and fingerprints; false when a key's fingerprint is unknown.
func dataHash(s *model.Secret) (uint64, bool) {
	var h uint64
	for k, ki := range s.Keys.All() {
		if ki.FP.IsZero() {
			return 0, false
		}
		x := maphash.String(dataHashSeed, k)
		x ^= binary.LittleEndian.Uint64(ki.FP[:8])
		x ^= uint64(ki.Len) << 40
		h += x * 0x9e3779b97f4a7c15
	}
	return h, true
}

// sameData reports whether two Secrets hold the same key names with the same
// lengths and fingerprints.
func sameData(a, b *model.Secret) bool {
	if a.Keys.Len() != b.Keys.Len() {
		return false
	}
	for k, x := range a.Keys.All() {
		y, ok := b.Keys.Get(k)
		if !ok || x.Len != y.Len || x.FP != y.FP {
			return false
		}
	}
	return true
}

// LastAppliedData is a Secret whose last-applied-configuration annotation holds a
// copy of its data: that copy never rotates.
type LastAppliedData struct {
	Namespace string
	Secret    string
	// Stale is true when a value in the copy differs from the live one (or its key
	// is gone from the live Secret).
	Stale bool
}

// LastAppliedDataSecrets lists Secrets whose last-applied annotation, of kind
// Secret, carries data or stringData keys. ESO copies an ExternalSecret's
// last-applied onto its target: that one is of kind ExternalSecret and holds no
// values, so it is not reported.
func LastAppliedDataSecrets(v model.View, avail model.Availability) []LastAppliedData {
	if !avail[model.ResSecrets] {
		return nil
	}
	var out []LastAppliedData
	for _, s := range v.Secrets() {
		la := s.LastApplied
		if la == nil || la.Err != "" || la.Kind != "Secret" || len(la.DataKeys) == 0 {
			continue
		}
		r := LastAppliedData{Namespace: s.Namespace, Secret: s.Name}
		for k, fp := range la.DataFPs.All() {
			if live, ok := s.Keys.Get(k); !ok || live.FP != fp {
				r.Stale = true
				break
			}
		}
		out = append(out, r)
	}
	return out
}

package modeltest

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

// NewStore puts records into a fresh model.Store (default history) in the order
// given; see Upsert for what a record may be.
func NewStore(t testing.TB, records ...any) *model.Store {
	t.Helper()
	s := model.NewStore(nil)
	for _, r := range records {
		Upsert(t, s, r)
	}
	return s
}

// Upsert puts one record, or a slice of records of one kind, into s: Secrets
// are observed at T0 (write them with s.UpsertSecret to choose the time);
// Pods, ServiceAccounts, ExternalSecrets, SecretStores, HelmReleases, ArgoApps,
// Namespaces, Desired (Argo CD target state), Flux Kustomizations, sources and
// FluxBuilds go to their Upsert/Set method.
// A nil slice adds nothing; anything else fails the test.
func Upsert(t testing.TB, s *model.Store, record any) {
	t.Helper()
	switch x := record.(type) {
	case *model.Secret:
		s.UpsertSecret(x, T0)
	case *model.Pod:
		s.UpsertPod(x)
	case *model.ServiceAccount:
		s.UpsertServiceAccount(x)
	case *model.ExternalSecret:
		s.UpsertExternalSecret(x, T0)
	case *model.SecretStore:
		s.UpsertStore(x)
	case *model.HelmRelease:
		s.UpsertHelmRelease(x)
	case *model.ArgoApp:
		s.UpsertApp(x)
	case *model.Namespace:
		s.UpsertNamespace(x)
	case Desired:
		rev := x.Revision
		if rev == "" {
			rev = Rev
		}
		objs := make([]model.Declared, len(x.Objects))
		for i, o := range x.Objects {
			if o.Revision == "" {
				o.Revision = rev
			}
			objs[i] = o
		}
		s.SetArgoDesired(x.App, objs)
	case *model.FluxKustomization:
		s.UpsertKustomization(x)
	case *model.FluxSource:
		s.UpsertFluxSource(x)
	case FluxBuild:
		s.SetFluxDesired(x.KS, &x.Desired)
	case []*model.Secret:
		upsertAll(t, s, x)
	case []*model.Pod:
		upsertAll(t, s, x)
	case []*model.ServiceAccount:
		upsertAll(t, s, x)
	case []*model.ExternalSecret:
		upsertAll(t, s, x)
	case []*model.SecretStore:
		upsertAll(t, s, x)
	case []*model.HelmRelease:
		upsertAll(t, s, x)
	case []*model.ArgoApp:
		upsertAll(t, s, x)
	case []Desired:
		upsertAll(t, s, x)
	case []any:
		upsertAll(t, s, x)
	default:
		t.Fatalf("modeltest.Upsert: unsupported record %T", record)
	}
}

func upsertAll[T any](t testing.TB, s *model.Store, xs []T) {
	t.Helper()
	for _, x := range xs {
		Upsert(t, s, x)
	}
}

// Read runs fn on a view of s and returns its result.
func Read[T any](s *model.Store, fn func(v model.View) T) T {
	var out T
	s.Read(func(v model.View) { out = fn(v) })
	return out
}

// All is every resource available.
func All() model.Availability { return AllBut() }

// AllBut is every resource available except those listed (present and false).
func AllBut(rs ...model.Resource) model.Availability {
	a := model.Availability{}
	for _, r := range model.AllResources {
		a[r] = true
	}
	for _, r := range rs {
		a[r] = false
	}
	return a
}

// Only is the listed resources available, every other one not (absent).
func Only(rs ...model.Resource) model.Availability {
	a := model.Availability{}
	for _, r := range rs {
		a[r] = true
	}
	return a
}

// Health is a model.Health fake for collectors: a resource mapped to true is
// enabled and synced, any other (false or absent) neither. States lists every
// resource of model.AllResources, in that order, never degraded, with no
// reason or version.
type Health map[model.Resource]bool

// States implements model.Health.
func (h Health) States() []model.ResourceState {
	out := make([]model.ResourceState, 0, len(model.AllResources))
	for _, r := range model.AllResources {
		out = append(out, model.ResourceState{Resource: r, Enabled: h[r], Synced: h[r]})
	}
	return out
}

// HealthAll is a Health with every resource available.
func HealthAll() Health { return HealthOnly(model.AllResources...) }

// HealthOnly is a Health with only the listed resources available.
func HealthOnly(rs ...model.Resource) Health {
	h := Health{}
	for _, r := range rs {
		h[r] = true
	}
	return h
}

var _ model.Health = Health(nil)

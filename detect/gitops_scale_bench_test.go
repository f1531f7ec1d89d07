package detect

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The GitOps detectors at scale (issue 35 item 3): N Argo CD Applications or
// N Flux Kustomizations with their desired state and the live Secrets and
// ExternalSecrets, at 100, 1,000 and 2,000, to show how the detectors grow.
// Numbers, never assertions:
//
//	go test -run '^$' -bench 'ArgoCDDetectorsScale|FluxDetectorsScale' -benchmem ./detect/

var gitopsScaleSizes = []int{100, 1000, 2000}

// argoScaleWorld: n Applications in argocd, each managing in its own
// namespace 2 Secrets and 2 ExternalSecrets (desired state from the Argo CD
// API, live objects in the store) plus a Deployment and a Service; automated,
// delivered at its revision; one in five with ignoreDifferences (a jq path
// over the ExternalSecrets' data, a JSON pointer on a Secret) and
// RespectIgnoreDifferences; one in twenty OutOfSync at a newer revision; one
// in fifty with a live Secret lacking a key Git declares.
func argoScaleWorld(tb testing.TB, n int) *model.Store {
	s := model.NewStore(nil)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%04d", i)
		ns := "team-" + name
		rev := fmt.Sprintf("%040x", 1000+i)
		desired := []model.Declared{
			mt.DesiredSecret(ns, "creds-0", "USER", "PASSWORD", "URL"), mt.DesiredSecret(ns, "creds-1", "USER", "PASSWORD", "URL"),
			mt.DesiredES(ns, "ext-0", "", "A", "B", "C", "D", "E"), mt.DesiredES(ns, "ext-1", "", "A", "B", "C", "D", "E"),
		}
		var res []model.ArgoResource
		for _, d := range desired {
			res = append(res, model.ArgoResource{Group: d.Group, Kind: d.Kind, Namespace: ns, Name: d.Name, Status: "Synced"})
		}
		res = append(res, model.ArgoResource{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web", Status: "Synced"},
			model.ArgoResource{Kind: "Service", Namespace: ns, Name: "web", Status: "Synced"})
		opts := []mt.AppOption{mt.AppAutomated(), mt.AppDelivered(rev, desired...), mt.AppResources(res...)}
		if i%5 == 0 {
			opts = append(opts, mt.AppRespect(), mt.AppIgnore(
				mt.Ignore("external-secrets.io", "ExternalSecret", nil, []string{".spec.data[].remoteRef.conversionStrategy"}),
				model.IgnoreDifference{Kind: "Secret", Name: "creds-1", JSONPointers: []string{"/data/URL"}}))
		}
		if i%20 == 0 {
			opts = append(opts, mt.AppSync("OutOfSync", fmt.Sprintf("%040x", 900000+i)))
		}
		app := mt.App("argocd", name, opts...)
		app.DestinationNamespace = ns
		mt.Upsert(tb, s, app)
		mt.Upsert(tb, s, mt.Desired{App: model.Ref{Namespace: "argocd", Name: name}, Objects: desired, Revision: rev})
		for j := 0; j < 2; j++ {
			keys := []string{"USER", "PASSWORD", "URL"}
			if j == 1 && i%50 == 0 {
				keys = keys[:2]
			}
			s.UpsertSecret(mt.Secret(ns, fmt.Sprintf("creds-%d", j), keys...), mt.T0)
			s.UpsertSecret(mt.Secret(ns, fmt.Sprintf("ext-%d", j), "A", "B", "C", "D", "E"), mt.T0)
			s.UpsertExternalSecret(mt.ES(ns, fmt.Sprintf("ext-%d", j), mt.ESData("A", "B", "C", "D", "E"),
				mt.ESRefreshed(mt.T0, time.Hour, true)), time.Time{})
		}
	}
	s.UpsertStore(mt.SecretStore("", "vault"))
	return s
}

// BenchmarkArgoCDDetectorsScale runs the detectors an Argo CD fleet feeds
// (the ignoreDifferences trap, not converging, pending sync, synced entries
// missing, missing keys with the argocd expectations) once, as a scrape does.
func BenchmarkArgoCDDetectorsScale(b *testing.B) {
	avail := mt.All()
	now := mt.T0.Add(time.Hour)
	for _, n := range gitopsScaleSizes {
		s := argoScaleWorld(b, n)
		b.Run("apps="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Read(func(v model.View) {
					benchSink = IgnoreListTraps(v, avail)
					benchSink = NotConvergingApps(v, avail, now, 10*time.Minute)
					benchSink = PendingSync(v, avail)
					benchSink = SyncedEntries(v, avail)
					benchSink = MissingKeys(v, avail)
				})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/app")
		})
	}
}

// fluxScaleWorld: n Kustomizations (10 per GitRepository), each with a build
// of 4 Secrets and 4 ExternalSecrets in its own namespace (the shape of
// internal/flux/desired's BenchmarkFluxScale builds), inventory of them, and
// the live objects; one in ten with a Secret lacking a key.
func fluxScaleWorld(tb testing.TB, n int) *model.Store {
	s := model.NewStore(nil)
	for a := 0; a < n/10; a++ {
		src := fmt.Sprintf("app-%03d", a)
		mt.Upsert(tb, s, mt.GitRepository("flux-system", src))
		for k := 0; k < 10; k++ {
			name := fmt.Sprintf("%s-k%d", src, k)
			ns := fmt.Sprintf("team-%03d-%d", a, k)
			var objs []model.Declared
			var opts []mt.KSOption
			for i := 0; i < 4; i++ {
				sec, es := fmt.Sprintf("k%d-db-%d", k, i), fmt.Sprintf("k%d-es-%d", k, i)
				objs = append(objs, mt.FluxSecret(ns, sec, "USER", "PASSWORD", "HOST", "PORT"), mt.FluxES(ns, es, "U", "P", "T"))
				opts = append(opts, mt.KSManages("", "Secret", ns, sec), mt.KSManages("external-secrets.io", "ExternalSecret", ns, es))
				keys := []string{"USER", "PASSWORD", "HOST", "PORT"}
				if k == 0 && i == 2 {
					keys = keys[:3]
				}
				s.UpsertSecret(mt.Secret(ns, sec, keys...), mt.T0)
				s.UpsertSecret(mt.Secret(ns, es, "U", "P", "T"), mt.T0)
				s.UpsertExternalSecret(mt.ES(ns, es, mt.ESData("U", "P", "T"), mt.ESRefreshed(mt.T0, time.Hour, true)), time.Time{})
			}
			ks := mt.Kustomization("flux-system", name, opts...)
			ks.SourceName = src
			mt.Upsert(tb, s, ks)
			mt.Upsert(tb, s, mt.Build("flux-system", name, objs...))
		}
	}
	s.UpsertStore(mt.SecretStore("", "vault"))
	return s
}

// BenchmarkFluxDetectorsScale runs the detectors the Flux desired state
// feeds once, as a scrape does.
func BenchmarkFluxDetectorsScale(b *testing.B) {
	avail := mt.All()
	for _, n := range gitopsScaleSizes {
		s := fluxScaleWorld(b, n)
		b.Run("ks="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Read(func(v model.View) {
					benchSink = FluxClaims(v)
					benchSink = FluxIgnoreTraps(v)
					benchSink = FluxNeverUpdatedObjects(v)
					benchSink = FluxSubstitutesMissing(v)
					benchSink = FluxUnjudged(v)
					benchSink = FluxUndetermined(v)
					benchSink = SyncedEntries(v, avail)
					benchSink = MissingKeys(v, avail)
				})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/kustomization")
		})
	}
}

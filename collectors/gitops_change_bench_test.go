package collectors

import (
	"fmt"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrapeAfterGitOpsChange: the scrape after one Kustomization's build
// changed, with n Kustomizations each delivering a Secret (with a last-applied
// list) and an ExternalSecret into a namespace of its own. The desired state's
// generation is global, so every namespace is evaluated again; each
// evaluation used to build the whole cluster's desired list (and
// last_applied_truncated's lists), n² in all. ns/op at n and 4n says which.
func BenchmarkScrapeAfterGitOpsChange(b *testing.B) {
	for _, n := range []int{100, 400} {
		b.Run(fmt.Sprintf("ks=%d", n), func(b *testing.B) {
			s := model.NewStore(nil)
			for i := range n {
				ns := fmt.Sprintf("app-%04d", i)
				name := "ks-" + ns
				mt.Upsert(b, s, mt.Kustomization("flux-system", name, mt.KSManages("", "Secret", ns, "db"),
					mt.KSManages("external-secrets.io", "ExternalSecret", ns, "api")))
				mt.Upsert(b, s, mt.GitRepository("flux-system", name))
				mt.Upsert(b, s, mt.Build("flux-system", name, mt.FluxSecret(ns, "db", "A", "B"), mt.FluxES(ns, "api", "X")))
				sec := mt.Secret(ns, "db", "A", "B")
				sec.LastApplied = &model.LastApplied{Kind: "Secret", Name: "db", DataKeys: []string{"A", "B"}, HoldsList: true}
				s.UpsertSecret(sec, mt.T0)
				mt.Upsert(b, s, mt.ES(ns, "api", mt.ESData("X")))
				s.UpsertSecret(mt.Secret(ns, "api", "X"), mt.T0)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewFindings(s, mt.HealthAll(), Config{}))
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
			ks0 := model.Ref{Namespace: "flux-system", Name: "ks-app-0000"}
			flip := false
			b.ReportAllocs()
			for b.Loop() {
				keys := []string{"A", "B"}
				if flip = !flip; flip {
					keys = []string{"B", "A"}
				}
				s.SetFluxDesired(ks0, &model.FluxDesired{Revision: mt.Revision1,
					Objects: []model.Declared{mt.FluxSecret("app-0000", "db", keys...), mt.FluxES("app-0000", "api", "X")}})
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

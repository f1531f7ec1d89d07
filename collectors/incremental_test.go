package collectors

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// The per-namespace results a scrape reuses must never differ from a full
// recomputation. This test drives a store through random writes of every kind
// (Secrets, Pods, ExternalSecrets, stores, Helm releases rendering into other
// namespaces, Argo CD desired state) and after each write compares the long-lived
// collector's output with a fresh collector's and with one that runs every
// detector on the whole model.

func incSecret(r *rand.Rand, ns, name string) *model.Secret {
	keys := map[string]model.KeyInfo{}
	for k := 0; k < 4; k++ {
		if r.IntN(3) > 0 {
			var fp model.Fingerprint
			fp[0] = byte(r.IntN(2)) // few distinct values: duplicates happen
			keys[fmt.Sprintf("k%d", k)] = model.KeyInfo{Len: 8, FP: fp, TrimFP: fp}
		}
	}
	s := &model.Secret{ObjectMeta: mt.Meta(ns, name), Type: "Opaque", Keys: model.NewKeySet(keys)}
	s.Annotations = map[string]string{}
	switch r.IntN(6) {
	case 0:
		s.Annotations[model.AnnCompareWith] = fmt.Sprintf("s%d", r.IntN(4))
	case 1:
		s.ExpectedKeys = []string{fmt.Sprintf("k%d", r.IntN(5))}
	case 2:
		var fp model.Fingerprint
		s.LastApplied = &model.LastApplied{APIVersion: "v1", Kind: "Secret", Name: name,
			DataKeys: []string{"k0", "k1"}, DataFPs: model.NewFPList(map[string]model.Fingerprint{"k0": fp, "k1": fp})}
	}
	if r.IntN(4) == 0 {
		s.Managers = []model.ManagedField{{Manager: "kubectl", Operation: "Update", OwnsData: true, Time: time.Unix(5000, 0)}}
	}
	return s
}

func incPod(r *rand.Rand, ns, name string) *model.Pod {
	p := &model.Pod{ObjectMeta: mt.Meta(ns, name), Phase: "Running",
		Workload:   model.Workload{Kind: "Deployment", Name: fmt.Sprintf("w%d", r.IntN(3))},
		Containers: []model.Container{{Name: "c", Kind: model.ContainerRegular, Running: true, StartedAt: time.Unix(int64(4000+r.IntN(2000)), 0)}}}
	for u := 0; u < 1+r.IntN(3); u++ {
		use := model.SecretUse{Secret: fmt.Sprintf("s%d", r.IntN(5)), Container: "c", Via: model.ViaEnv}
		switch r.IntN(3) {
		case 0:
			use.Via = model.ViaEnvFrom
		default:
			use.Key = fmt.Sprintf("k%d", r.IntN(5))
			use.Optional = r.IntN(2) == 0
		}
		p.Uses = append(p.Uses, use)
	}
	return p
}

func incES(r *rand.Rand, ns, name string, now time.Time) *model.ExternalSecret {
	e := &model.ExternalSecret{ObjectMeta: mt.Meta(ns, name), ESWrites: model.ESWrites{Target: fmt.Sprintf("s%d", r.IntN(5)),
		CreationPolicy: []string{"Owner", "Merge"}[r.IntN(2)], DeletionPolicy: []string{"Retain", "Delete", "Merge"}[r.IntN(3)]},
		StoreKind: "ClusterSecretStore", StoreName: "vault", RefreshInterval: time.Hour, RefreshIntervalSet: true,
		Ready: model.Condition{Status: []string{"True", "False"}[r.IntN(2)], Reason: "SecretSynced"}, RefreshTime: now.Add(-time.Minute)}
	for k := 0; k < r.IntN(4); k++ {
		e.DataKeys = append(e.DataKeys, fmt.Sprintf("k%d", k+r.IntN(2)))
	}
	if r.IntN(4) == 0 {
		e.DataFromFind, e.DataFrom = 1, 1
	}
	if r.IntN(3) == 0 {
		e.CreationPolicyApplied = "unset"
	}
	e.Annotations = map[string]string{}
	if r.IntN(6) == 0 {
		e.Annotations[model.AnnCompareWith] = fmt.Sprintf("s%d", r.IntN(5))
	}
	return e
}

func gatherText(t *testing.T, f *Findings) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if n := mf.GetName(); n == "driftwatch_detector_duration_seconds" || n == "driftwatch_detector_namespace_evaluations_total" || n == "driftwatch_evaluations_total" {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// normalize parses text exposition (failing on anything malformed, such as a
// family split in two) and re-encodes it with families and series sorted.
func normalize(t *testing.T, text string) string {
	t.Helper()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("unparsable exposition: %v\n%s", err, text)
	}
	names := make([]string, 0, len(mfs))
	for n := range mfs {
		if n == "driftwatch_detector_duration_seconds" || n == "driftwatch_detector_namespace_evaluations_total" || n == "driftwatch_evaluations_total" {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, n := range names {
		mf := mfs[n]
		key := func(m *dto.Metric) string {
			var sb strings.Builder
			for _, l := range m.GetLabel() {
				sb.WriteString(l.GetName() + "=" + l.GetValue() + ",")
			}
			return sb.String()
		}
		sort.Slice(mf.Metric, func(i, j int) bool { return key(mf.Metric[i]) < key(mf.Metric[j]) })
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

func writeText(t *testing.T, f *Findings) string {
	t.Helper()
	var buf bytes.Buffer
	if err := f.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// withoutEvaluationSeries drops the series that count or time evaluations
// (their HELP and TYPE lines stay).
func withoutEvaluationSeries(text string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, "driftwatch_detector_duration_seconds{") || strings.HasPrefix(l, "driftwatch_detector_namespace_evaluations_total{") ||
			strings.HasPrefix(l, "driftwatch_evaluations_total{") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

func TestIncrementalEqualsFullRecompute(t *testing.T) {
	now := time.Unix(10000, 0)
	cfg := Config{Inventory: true, Now: func() time.Time { return now }}
	namespaces := []string{"a", "b", "c"}
	// Three random walks; one under the race detector, which this single
	// goroutine gives nothing to find beyond the first (the walks cost 4.7 s
	// of the package's 5 s, 50 s of its 57 s under -race).
	seeds := uint64(3)
	if raceDetector {
		seeds = 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		s := model.NewStore(nil)
		health := mt.HealthAll()
		inc := NewFindings(s, health, cfg)
		incText := NewFindings(s, health, cfg) // reuses encoded text across steps
		// ahead is evaluated ahead of some scrapes (Prepare), before and
		// after the step's change, with time passing in between (grace
		// periods end): its scrape must export what the others compute.
		ahead := NewFindings(s, health, cfg)
		prepared := 0
		findings := 0
		for step := 0; step < 400; step++ {
			if r.IntN(2) == 0 {
				prepared += ahead.Prepare()
			}
			now = now.Add(time.Duration(r.IntN(20)) * time.Second)
			ns := namespaces[r.IntN(len(namespaces))]
			switch op := r.IntN(13); op {
			case 0, 1, 2:
				s.UpsertSecret(incSecret(r, ns, fmt.Sprintf("s%d", r.IntN(5))), now.Add(time.Duration(step)*time.Second))
			case 3:
				s.DeleteSecret(ns, fmt.Sprintf("s%d", r.IntN(5)), now)
			case 4, 5:
				s.UpsertPod(incPod(r, ns, fmt.Sprintf("p%d", r.IntN(6))))
			case 6:
				s.DeletePod(ns, fmt.Sprintf("p%d", r.IntN(6)))
			case 7:
				s.UpsertExternalSecret(incES(r, ns, fmt.Sprintf("e%d", r.IntN(4)), now), time.Time{})
			case 8:
				s.DeleteExternalSecret(ns, fmt.Sprintf("e%d", r.IntN(4)))
			case 9: // a release in one namespace rendering into another, maybe one without objects
				into := append(namespaces, "no-objects")[r.IntN(len(namespaces)+1)]
				s.UpsertHelmRelease(mt.HelmRelease(ns, "rel", 1, "deployed",
					mt.HelmSecret(into, fmt.Sprintf("s%d", r.IntN(5)), fmt.Sprintf("k%d", r.IntN(5)))))
			case 10:
				s.UpsertApp(mt.App("argocd", "app", func(a *model.ArgoApp) { a.Deleting = r.IntN(3) == 0 }))
				s.SetArgoDesired(model.Ref{Namespace: "argocd", Name: "app"}, []model.Declared{{Kind: "Secret",
					Namespace: append(namespaces, "argo-only")[r.IntN(len(namespaces)+1)], Name: fmt.Sprintf("s%d", r.IntN(5)),
					Keys: []string{fmt.Sprintf("k%d", r.IntN(5))}}})
			case 12: // a namespace's driftwatch.io/ignore comes and goes
				n := mt.Namespace(ns)
				if v := []string{"", "missing_keys", "all", "stale_pods,adoption"}[r.IntN(4)]; v != "" {
					mt.Annotate(n, model.AnnIgnore, v)
				}
				s.UpsertNamespace(n)
			case 11:
				s.UpsertStore(mt.ClusterSecretStore("vault", mt.StoreProvider("vault"), mt.StoreReady([]string{"True", "False"}[r.IntN(2)], "")))
			}
			if r.IntN(3) == 0 {
				prepared += ahead.Prepare()
			}
			if r.IntN(10) == 0 { // availability changes drop every reused result
				health[model.ResExternalSecrets] = !health[model.ResExternalSecrets]
			}
			got := gatherText(t, inc)
			fresh := gatherText(t, NewFindings(s, health, cfg))
			whole := NewFindings(s, health, cfg)
			whole.noSplit = true
			full := gatherText(t, whole)
			if got != fresh || got != full {
				t.Fatalf("seed %d step %d: reused results differ from a recomputation\nreused:\n%s\nfresh:\n%s\nwhole model:\n%s",
					seed, step, got, fresh, full)
			}
			incOut := writeText(t, incText)
			if txt, want := normalize(t, incOut), normalize(t, got); txt != want {
				t.Fatalf("seed %d step %d: WriteText differs from the registry's exposition\nWriteText:\n%s\nregistry:\n%s", seed, step, txt, want)
			}
			// The same WriteText path: byte for byte, but for the series that
			// count evaluations or time them.
			if txt, want := withoutEvaluationSeries(writeText(t, ahead)), withoutEvaluationSeries(incOut); txt != want {
				t.Fatalf("seed %d step %d: WriteText after Prepare differs from WriteText without\nahead:\n%s\nwithout:\n%s", seed, step, txt, want)
			}
			findings += strings.Count(got, "\ndriftwatch_") - strings.Count(got, "\ndriftwatch_detector_enabled")
		}
		if prepared < 100 {
			t.Fatalf("seed %d: Prepare evaluated only %d namespaces; the ahead path is not exercised", seed, prepared)
		}
		if findings < 400 {
			t.Fatalf("seed %d: only %d finding series over the run; the fixture does not exercise the detectors", seed, findings)
		}
	}
}

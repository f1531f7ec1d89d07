package collectors

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// driftwatch.io/ignore on the object, on its namespace, or on a consumer that
// would have expected a key drops the findings and counts them: nothing is
// hidden silently. The per-namespace reuse follows a namespace's annotation.
func TestIgnoreAnnotation(t *testing.T) {
	now := time.Unix(10000, 0)
	s := model.NewStore(nil)
	// quiet: a Secret that declares it does not care about missing keys.
	s.UpsertSecret(mt.Annotate(mt.Secret("app", "quiet", "a"), model.AnnIgnore, "stale_pods, missing_keys"), now)
	s.UpsertSecret(mt.Secret("app", "loud", "a"), now)
	// a pod that reads keys nothing provides: its own ignore drops them.
	s.UpsertPod(mt.Annotate(mt.Pod("app", "feature-off", mt.Env("loud", "b"), mt.EnvFrom("nowhere")), model.AnnIgnore, "missing_keys"))
	s.UpsertPod(mt.Pod("app", "reader", mt.Env("quiet", "x"), mt.Env("loud", "c")))
	// another namespace, ignored as a whole.
	s.UpsertSecret(mt.Secret("legacy", "old", "a"), now)
	s.UpsertPod(mt.Pod("legacy", "p", mt.Env("old", "z")))
	s.UpsertNamespace(mt.Namespace("legacy", model.AnnIgnore, "all"))

	f := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return now }})
	const want = `
# HELP driftwatch_findings_silenced Findings a driftwatch.io/ignore annotation (on the object, its namespace, or a pod that would have expected a key) keeps out of the finding metrics, per detector and namespace: nothing is hidden silently.
# TYPE driftwatch_findings_silenced gauge
driftwatch_findings_silenced{detector="missing_keys",namespace="app"} 3
driftwatch_findings_silenced{detector="missing_keys",namespace="legacy"} 1
# HELP driftwatch_secret_missing_key 1 for each key an expectation names that the Secret lacks; optional="true" when only optional references (secretKeyRef or volume items with optional: true) name it.
# TYPE driftwatch_secret_missing_key gauge
driftwatch_secret_missing_key{key="c",namespace="app",optional="false",secret="loud",source="pod"} 1
`
	if err := testutil.CollectAndCompare(f, strings.NewReader(want), "driftwatch_findings_silenced", "driftwatch_secret_missing_key",
		"driftwatch_secret_absent"); err != nil {
		t.Fatal(err)
	}
	// Run says the same count (agent lint reads it there), from a fresh
	// evaluation and from the cached per-namespace results alike; so does the
	// evaluation a scrape leaves for the page (Latest).
	if got := f.Run().Silenced; got != 4 {
		t.Errorf("Run().Silenced = %d, want 4 (the sum of driftwatch_findings_silenced)", got)
	}
	if got := f.Run().Silenced; got != 4 {
		t.Errorf("Run().Silenced from cached namespaces = %d, want 4", got)
	}
	if err := f.WriteText(io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := f.Latest(time.Hour).Silenced; got != 4 {
		t.Errorf("the scrape's evaluation says %d silenced, want 4", got)
	}
	// The namespace's annotation goes: its findings come back (the cached
	// namespace result is not reused).
	var text strings.Builder
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	s.UpsertNamespace(mt.Namespace("legacy"))
	text.Reset()
	if err := f.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `driftwatch_secret_missing_key{key="z",namespace="legacy",optional="false",secret="old",source="pod"} 1`) ||
		strings.Contains(text.String(), `driftwatch_findings_silenced{detector="missing_keys",namespace="legacy"}`) {
		t.Errorf("after the namespace's ignore went:\n%s", text.String())
	}
}

func TestIgnoresParsing(t *testing.T) {
	for v, want := range map[string]bool{"missing_keys": true, " adoption , missing_keys ": true, "all": true,
		"missing_keys_x": false, "": false, "missing": false, "ALL": false} {
		m := model.ObjectMeta{Annotations: map[string]string{model.AnnIgnore: v}}
		if got := m.Ignores("missing_keys"); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
	// A former detector name still silences the renamed detector, and only it.
	for former, now := range model.DetectorAliases {
		m := model.ObjectMeta{Annotations: map[string]string{model.AnnIgnore: former}}
		if !m.Ignores(now) || m.Ignores("missing_keys") {
			t.Errorf("alias %s: ignores %s %v, missing_keys %v", former, now, m.Ignores(now), m.Ignores("missing_keys"))
		}
		if !slices.ContainsFunc(registered, func(d detector) bool { return d.name == now }) {
			t.Errorf("alias %s names %s, which is not a registered detector", former, now)
		}
	}
}

// A detector that panics is contained: its partial output is dropped, its
// success gauge says 0 and its failures are counted, the other detectors run.
func TestDetectorPanicContained(t *testing.T) {
	s := testStore()
	f := NewFindings(s, mt.HealthAll(), Config{Now: func() time.Time { return time.Unix(10000, 0) }})
	for _, perNS := range []bool{false, true} {
		f.detectors = append(f.detectors, detector{name: "boom", perNamespace: perNS, emit: func(e *emitter, v model.View, _ model.Availability, _ time.Time) {
			e.gauge(descDuplicate, 1, "app", "half", "written")
			panic("detector bug")
		}})
		var text strings.Builder
		if err := f.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		out := text.String()
		for _, want := range []string{`driftwatch_detector_success{detector="boom"} 0`, `driftwatch_detector_success{detector="missing_keys"} 1`,
			`driftwatch_secret_absent{namespace="app",secret="gone",source="pod"} 1`} {
			if !strings.Contains(out, want) {
				t.Errorf("perNamespace=%v: no %s in:\n%s", perNS, want, out)
			}
		}
		if strings.Contains(out, `secret="half"`) {
			t.Errorf("perNamespace=%v: the failed detector's partial output was served", perNS)
		}
		if n := f.panics["boom"]; n == 0 {
			t.Errorf("perNamespace=%v: failures not counted", perNS)
		}
		if ev := f.Run(); !slices.Equal(ev.Failed, []string{"boom"}) || len(ev.Findings) == 0 {
			fs, failed := ev.Findings, ev.Failed
			t.Errorf("perNamespace=%v: Run names failed detectors %v (want boom) with %d findings of the others", perNS, failed, len(fs))
		}
		f.detectors = f.detectors[:len(f.detectors)-1]
	}
}

// A failure in BeforeDetector counts as the detector's own, and Run names it.
func TestBeforeDetectorFailureIsNamed(t *testing.T) {
	f := NewFindings(testStore(), mt.HealthAll(), Config{Now: func() time.Time { return time.Unix(10000, 0) },
		BeforeDetector: func(d string) {
			if d == "compare" {
				panic("injected")
			}
		}})
	if failed := f.Run().Failed; !slices.Equal(failed, []string{"compare"}) {
		t.Errorf("failed %v, want [compare]", failed)
	}
	f.cfg.BeforeDetector = nil
	if failed := f.Run().Failed; len(failed) != 0 {
		t.Errorf("failed %v once the fault is gone", failed)
	}
}

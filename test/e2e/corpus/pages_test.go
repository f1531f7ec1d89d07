package corpus

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

// isFinding reports whether a scraped series is a finding (the catalog says).
func isFinding(s cluster.Series) bool { return cluster.IsFinding(s) }

// page is one page-grade finding: the alert the shipped rules would fire and
// the object it names.
type page struct {
	Alert  string
	Object string // namespace/secret, namespace/externalsecret, kind namespace/name, namespace/application
}

func (p page) String() string { return p.Alert + " " + p.Object }

// pageGrade returns the page-grade findings of one scrape, as the rules with
// `severity: critical` in alerts/driftwatch.rules.yaml select them (the
// consumer joins included), with the series that make each.
//
// A series is page-grade only when its family's catalog declaration
// (collectors.Catalog: the severity declared once, next to the metric) makes it
// critical; the consumer joins of the two consumer pages are the rules'. The
// real Prometheus → Alertmanager chain in TestCorpus is the primary oracle.
func pageGrade(series []cluster.Series) map[page][]cluster.Series {
	out := map[page][]cluster.Series{}
	type nsSecret struct{ ns, secret string }
	// Consumed (the "and on (namespace, secret) (...)" of the two consumer pages).
	consumed := map[nsSecret]bool{}
	for _, s := range series {
		k := nsSecret{s.Labels["namespace"], s.Labels["secret"]}
		switch s.Name {
		case "driftwatch_secret_missing_key_consumer_pods", "driftwatch_secret_short_consumer_pods":
			if s.Value > 0 {
				consumed[k] = true
			}
		}
	}
	sourcePod := func(name string) map[nsSecret]bool {
		m := map[nsSecret]bool{}
		for _, s := range series {
			if s.Name == name && s.Labels["source"] == "pod" {
				m[nsSecret{s.Labels["namespace"], s.Labels["secret"]}] = true
			}
		}
		return m
	}
	missingFromPod := sourcePod("driftwatch_secret_missing_keys")
	absentFromPod := sourcePod("driftwatch_secret_absent")
	// The "unless on (namespace, kind, name) truncated_patch" of the synced
	// entries page.
	truncated := map[string]bool{}
	for _, s := range series {
		if s.Name == "driftwatch_last_applied_truncated" && s.Labels["cause"] == "truncated_patch" && s.Value > 0 {
			truncated[s.Labels["kind"]+" "+s.Labels["namespace"]+"/"+s.Labels["name"]] = true
		}
	}
	for _, s := range series {
		if !critical(s) {
			continue
		}
		ns := s.Labels["namespace"]
		k := nsSecret{ns, s.Labels["secret"]}
		var p page
		switch {
		case s.Name == "driftwatch_secret_missing_keys" && s.Value > 0 && (consumed[k] || missingFromPod[k]):
			p = page{"DriftwatchSecretMissingKeyConsumed", ns + "/" + k.secret}
		case s.Name == "driftwatch_secret_absent" && s.Value > 0 && (consumed[k] || absentFromPod[k]):
			p = page{"DriftwatchSecretAbsentConsumed", ns + "/" + k.secret}
		case s.Name == "driftwatch_externalsecret_ready_but_short" && s.Value > 0:
			p = page{"DriftwatchExternalSecretReadyButShort", ns + "/" + s.Labels["externalsecret"]}
		case s.Name == "driftwatch_secret_flapping" && s.Value > 0:
			p = page{"DriftwatchSecretFlapping", ns + "/" + k.secret}
		case s.Name == "driftwatch_last_applied_truncated" && s.Value > 0:
			p = page{"DriftwatchLastAppliedTruncated", s.Labels["kind"] + " " + ns + "/" + s.Labels["name"]}
		case s.Name == "driftwatch_argocd_ignore_list_trap" && s.Value > 0:
			p = page{"DriftwatchArgoCDIgnoreListTrap", ns + "/" + s.Labels["application"]}
		case s.Name == "driftwatch_gitops_synced_entries_missing" && s.Value > 0:
			obj := s.Labels["kind"] + " " + ns + "/" + s.Labels["name"]
			if truncated[obj] {
				continue // DriftwatchLastAppliedTruncated pages for it
			}
			p = page{"DriftwatchGitOpsSyncedEntriesMissing", obj}
		case s.Name == "driftwatch_secret_missing_keys" || s.Name == "driftwatch_secret_missing_key" || s.Name == "driftwatch_secret_absent" || s.Value == 0:
			continue // not consumed: the consumer pages do not fire
		default:
			// A critical family this classifier does not know yet: count it as
			// a page rather than let it pass unseen.
			p = page{"critical " + s.Name, ns}
		}
		out[p] = append(out[p], s)
	}
	// The consumer series that joined in, for the report.
	for p := range out {
		switch p.Alert {
		case "DriftwatchSecretMissingKeyConsumed", "DriftwatchSecretAbsentConsumed":
			ns, secret, _ := strings.Cut(p.Object, "/")
			for _, s := range series {
				if (s.Name == "driftwatch_secret_missing_key_consumer_pods" || s.Name == "driftwatch_secret_short_consumer_pods") &&
					s.Labels["namespace"] == ns && s.Labels["secret"] == secret {
					out[p] = append(out[p], s)
				}
			}
		}
	}
	return out
}

// critical reports whether a series' family declares it critical (a page).
func critical(s cluster.Series) bool {
	f, ok := collectors.Lookup(s.Name)
	return ok && f.Kind == collectors.KindFinding && f.SeverityOf(s.Labels) == collectors.SevCritical
}

// TestPageGradeFollowsTheCriticalRules checks the classifier on hand-made
// scrapes, so the corpus test's "no page" cannot pass because the classifier
// sees nothing.
func TestPageGradeFollowsTheCriticalRules(t *testing.T) {
	s := func(name string, v float64, kv ...string) cluster.Series {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return cluster.Series{Name: name, Labels: l, Value: v}
	}
	for _, tc := range []struct {
		name   string
		series []cluster.Series
		want   []string
	}{
		{"missing keys from an ExternalSecret, nobody consumes: no page",
			[]cluster.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "externalsecret", "optional", "false")}, nil},
		{"missing keys, a running reader: page",
			[]cluster.Series{
				s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "externalsecret", "optional", "false"),
				s("driftwatch_secret_short_consumer_pods", 2, "namespace", "a", "secret", "s", "workload_kind", "Deployment", "workload", "w"),
			}, []string{"DriftwatchSecretMissingKeyConsumed a/s"}},
		{"missing keys a pod expects: page",
			[]cluster.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "pod", "optional", "false")},
			[]string{"DriftwatchSecretMissingKeyConsumed a/s"}},
		{"absent, expected by a pod: page",
			[]cluster.Series{s("driftwatch_secret_absent", 1, "namespace", "a", "secret", "s", "source", "pod")},
			[]string{"DriftwatchSecretAbsentConsumed a/s"}},
		{"absent, expected by Helm only, a consumer in another Secret: no page",
			[]cluster.Series{
				s("driftwatch_secret_absent", 1, "namespace", "a", "secret", "s", "source", "helm"),
				s("driftwatch_secret_missing_key_consumer_pods", 1, "namespace", "a", "secret", "other", "workload_kind", "Deployment", "workload", "w"),
			}, nil},
		{"ready but short: page",
			[]cluster.Series{s("driftwatch_externalsecret_ready_but_short", 1, "namespace", "a", "externalsecret", "e", "secret", "s", "reason", "r")},
			[]string{"DriftwatchExternalSecretReadyButShort a/e"}},
		{"flapping: page",
			[]cluster.Series{s("driftwatch_secret_flapping", 2, "namespace", "a", "secret", "s", "writers", "x,y")},
			[]string{"DriftwatchSecretFlapping a/s"}},
		{"last-applied truncated: truncated_patch pages, the other causes warn",
			[]cluster.Series{
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "ExternalSecret", "name", "e", "cause", "truncated_patch"),
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "Secret", "name", "s", "cause", "live_shorter"),
			},
			[]string{"DriftwatchLastAppliedTruncated ExternalSecret a/e"}},
		{"a missing key only optional references name: warns",
			[]cluster.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "pod", "optional", "true")}, nil},
		{"ignore-list trap that rebuilds the list: page; the other effects: warning",
			[]cluster.Series{
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "x", "respect_ignore_differences", "true", "effect", "rebuilds_list"),
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "y", "respect_ignore_differences", "true", "effect", "rebuilds_list_if_present"),
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "z", "respect_ignore_differences", "false", "effect", "hides_new_entries"),
			}, []string{"DriftwatchArgoCDIgnoreListTrap a/x"}},
		{"synced entries missing: page for an ExternalSecret unless truncated_patch pages for it; a Secret warns",
			[]cluster.Series{
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "ExternalSecret", "name", "e", "source", "argocd"),
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "ExternalSecret", "name", "t", "source", "argocd"),
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "ExternalSecret", "name", "t", "cause", "truncated_patch"),
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "Secret", "name", "s", "source", "argocd"),
			},
			[]string{"DriftwatchGitOpsSyncedEntriesMissing ExternalSecret a/e", "DriftwatchLastAppliedTruncated ExternalSecret a/t"}},
		{"a waiting sync is info",
			[]cluster.Series{s("driftwatch_secret_key_pending_sync", 1, "namespace", "a", "secret", "s", "key", "k", "source", "argocd")}, nil},
		{"warnings never page",
			[]cluster.Series{
				s("driftwatch_workload_stale_pods", 1, "namespace", "a", "workload_kind", "Deployment", "workload", "w", "secret", "s"),
				s("driftwatch_externalsecret_not_ready", 1, "namespace", "a", "externalsecret", "e", "reason", "r"),
				s("driftwatch_externalsecret_unsafe", 1, "namespace", "a", "externalsecret", "e", "reason", "r"),
			}, nil},
	} {
		var got []string
		for p := range pageGrade(tc.series) {
			got = append(got, p.String())
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: pages %q, want %q", tc.name, got, tc.want)
		}
	}
}

// ---- the scrape monitor ------------------------------------------------------

// allowance lets a real fault's page appear from when the test injects it
// until the test has seen the agent clear it.
type allowance struct {
	page     page
	from, to time.Time // to zero: still open
}

// observed is one finding series seen by the monitor.
type observed struct {
	series                cluster.Series
	first, last           time.Time
	firstPhase, lastPhase string
	scrapes               int
}

// pageSeen is one page-grade finding the monitor saw outside any allowance.
type pageSeen struct {
	first, last           time.Time
	firstPhase, lastPhase string
	scrapes               int
	series                map[string]bool
}

// monitor scrapes the agent every interval from readiness to the end of the
// test and records every finding series and every page-grade finding, with
// the phase of the test it appeared in.
type monitor struct {
	agent    *cluster.Agent
	interval time.Duration

	mu         sync.Mutex
	phase      string
	allow      []*allowance
	seen       map[string]*observed
	pages      map[page]*pageSeen // outside every allowance
	scrapes    int
	failed     int
	preReady   []string // findings served while /readyz was not 200 (before and after the scrape)
	stop, done chan struct{}
	stopOnce   sync.Once
}

func newMonitor(a *cluster.Agent, interval time.Duration) *monitor {
	return &monitor{agent: a, interval: interval, phase: "start", seen: map[string]*observed{}, pages: map[page]*pageSeen{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (m *monitor) setPhase(p string) {
	m.mu.Lock()
	m.phase = p
	m.mu.Unlock()
}

// allowFault opens an allowance for a real fault's page; the returned func
// closes it (call it once the agent no longer reports the fault).
func (m *monitor) allowFault(p page) (closeIt func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := &allowance{page: p, from: time.Now()}
	m.allow = append(m.allow, a)
	return func() {
		m.mu.Lock()
		a.to = time.Now()
		m.mu.Unlock()
	}
}

func (m *monitor) allowed(p page, at time.Time) bool {
	for _, a := range m.allow {
		if a.page == p && !at.Before(a.from) && (a.to.IsZero() || at.Before(a.to)) {
			return true
		}
	}
	return false
}

func (m *monitor) start() { go m.loop() }

func (m *monitor) loop() {
	defer close(m.done)
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		m.scrapeOnce()
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

func (m *monitor) ready() bool {
	code, _, err := m.agent.Get("/readyz")
	return err == nil && code == http.StatusOK
}

func (m *monitor) scrapeOnce() {
	at := time.Now()
	readyBefore := m.ready()
	all, err := m.agent.Scrape()
	readyAfter := m.ready()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.failed++
		return
	}
	m.scrapes++
	for _, s := range all {
		if !isFinding(s) {
			continue
		}
		if !readyBefore && !readyAfter {
			m.preReady = append(m.preReady, fmt.Sprintf("[%s] %s", m.phase, s))
		}
		k := seriesKey(s)
		o := m.seen[k]
		if o == nil {
			o = &observed{series: s, first: at, firstPhase: m.phase}
			m.seen[k] = o
		}
		o.last, o.lastPhase = at, m.phase
		o.scrapes++
	}
	for p, ss := range pageGrade(all) {
		if m.allowed(p, at) {
			continue
		}
		ps := m.pages[p]
		if ps == nil {
			ps = &pageSeen{first: at, firstPhase: m.phase, series: map[string]bool{}}
			m.pages[p] = ps
		}
		for _, s := range ss {
			ps.series[seriesKey(s)] = true
		}
		ps.last, ps.lastPhase = at, m.phase
		ps.scrapes++
	}
}

// finish stops the monitor after one last scrape.
func (m *monitor) finish() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

// preReadyFindings lists the findings served while /readyz answered not 200
// both before and after the scrape.
func (m *monitor) preReadyFindings() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.preReady...)
}

// seriesKey is a series' name and labels (no value).
func seriesKey(s cluster.Series) string {
	keys := slices.Sorted(maps.Keys(s.Labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, s.Labels[k]))
	}
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}

// report lists every finding series seen, grouped by namespace, with its
// page grade (from the last scrape it was in) and the phases it was seen in.
func (m *monitor) report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := slices.Sorted(maps.Keys(m.seen))
	var b strings.Builder
	fmt.Fprintf(&b, "%d scrapes (%d failed); %d distinct finding series:\n", m.scrapes, m.failed, len(keys))
	for _, k := range keys {
		o := m.seen[k]
		fmt.Fprintf(&b, "  %s  [%s .. %s, %d scrapes, last value %g]\n", k, o.firstPhase, o.lastPhase, o.scrapes, o.series.Value)
	}
	return b.String()
}

// unexpectedPages lists the page-grade findings seen outside every allowance.
func (m *monitor) unexpectedPages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p, ps := range m.pages {
		out = append(out, fmt.Sprintf("%s: seen in %d scrapes, first in phase %q, last in phase %q; series:\n      %s",
			p, ps.scrapes, ps.firstPhase, ps.lastPhase, strings.Join(slices.Sorted(maps.Keys(ps.series)), "\n      ")))
	}
	sort.Strings(out)
	return out
}

// Package pages is what the corpus end-to-end tests (test/e2e/corpus and
// test/e2e/corpus/gitops) judge an agent's scrapes with: the page classifier
// (which findings would page, as the shipped critical rules select them) and
// a scrape monitor that records every finding series from readiness to the
// end of a test, with the test's phase, and every page-grade finding outside
// the windows the test opened for its real faults.
package pages

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// Page is one page-grade finding: the alert the shipped rules would fire and
// the object it names.
type Page struct {
	Alert  string
	Object string // namespace/secret, namespace/externalsecret, kind namespace/name, namespace/application
}

func (p Page) String() string { return p.Alert + " " + p.Object }

// Grade returns the page-grade findings of one scrape: the pages the rules
// with `severity: critical` in alerts/driftwatch.rules.yaml fire (their joins
// included), read from the rules file itself (PageRules), with the series that
// make each. A series its family's catalog declaration makes critical that no
// such rule selects counts as a page of its own ("critical <metric>") rather
// than pass unseen. It panics when the rules file holds a critical finding
// rule it cannot read (PageRules' test fails first).
func Grade(series []scrape.Series) map[Page][]scrape.Series {
	rules, err := PageRules()
	if err != nil {
		panic("pages: " + err.Error())
	}
	out := map[Page][]scrape.Series{}
	for i := range rules {
		rules[i].evaluate(series, out)
	}
	covered := coveredFamilies(rules)
	for _, s := range series {
		if Critical(s) && s.Value > 0 && !covered[s.Name] {
			p := Page{"critical " + s.Name, s.Labels["namespace"]}
			out[p] = append(out[p], s)
		}
	}
	return out
}

// Critical reports whether a series' family declares it critical (a page).
func Critical(s scrape.Series) bool { return Severity(s) == finding.SevCritical }

// Severity is a finding series' severity as its family's catalog declaration
// gives it; "" for a series that is not a finding.
func Severity(s scrape.Series) finding.Severity {
	f, ok := finding.Lookup(s.Name)
	if !ok || f.Kind != finding.KindFinding {
		return ""
	}
	return f.SeverityOf(s.Labels)
}

// ---- the scrape monitor ------------------------------------------------------

// allowance lets a real fault's page appear from when the test injects it
// until the test has seen the agent clear it.
type allowance struct {
	page     Page
	from, to time.Time // to zero: still open
}

// seriesAllowance lets finding series that match appear from when the test
// opens it until it closes it (a real fault's warnings, a true finding).
type seriesAllowance struct {
	match    func(scrape.Series) bool
	from, to time.Time
}

// Observed is one finding series seen by the monitor.
type Observed struct {
	Series                scrape.Series // as last seen
	First, Last           time.Time
	FirstPhase, LastPhase string
	Scrapes               int
}

// pageSeen is one page-grade finding the monitor saw outside any allowance.
type pageSeen struct {
	first, last           time.Time
	firstPhase, lastPhase string
	scrapes               int
	series                map[string]bool
}

// Monitor scrapes the agent every interval from readiness to the end of the
// test and records every finding series and every page-grade finding, with
// the phase of the test it appeared in.
type Monitor struct {
	agent    Agent
	interval time.Duration

	mu         sync.Mutex
	phase      string
	allow      []*allowance
	allowS     []*seriesAllowance
	seen       map[string]*Observed
	pages      map[Page]*pageSeen   // outside every allowance
	stray      map[string]*Observed // warning or critical findings outside every series allowance
	scrapes    int
	failed     int
	preReady   []string // findings served while /readyz was not 200 (before and after the scrape)
	stop, done chan struct{}
	stopOnce   sync.Once
}

// Agent is what a Monitor reads of the agent under test (a *cluster.Agent):
// its HTTP server's answers and its scrapes.
type Agent interface {
	Get(path string) (int, string, error)
	Scrape() ([]scrape.Series, error)
}

// NewMonitor returns a monitor of agent a; Start starts it.
func NewMonitor(a Agent, interval time.Duration) *Monitor {
	return &Monitor{agent: a, interval: interval, phase: "start", seen: map[string]*Observed{}, pages: map[Page]*pageSeen{},
		stray: map[string]*Observed{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// SetPhase names what the test does now; every series seen is recorded with it.
func (m *Monitor) SetPhase(p string) {
	m.mu.Lock()
	m.phase = p
	m.mu.Unlock()
}

// AllowFault opens an allowance for a real fault's page; the returned func
// closes it (call it once the agent no longer reports the fault).
func (m *Monitor) AllowFault(p Page) (closeIt func()) {
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

// AllowSeries opens an allowance for the warning- or critical-grade finding
// series that match (UnexpectedFindings leaves them out while it is open);
// the returned func closes it.
func (m *Monitor) AllowSeries(match func(scrape.Series) bool) (closeIt func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := &seriesAllowance{match: match, from: time.Now()}
	m.allowS = append(m.allowS, a)
	return func() {
		m.mu.Lock()
		a.to = time.Now()
		m.mu.Unlock()
	}
}

func (m *Monitor) allowed(p Page, at time.Time) bool {
	for _, a := range m.allow {
		if a.page == p && !at.Before(a.from) && (a.to.IsZero() || at.Before(a.to)) {
			return true
		}
	}
	return false
}

func (m *Monitor) allowedSeries(s scrape.Series, at time.Time) bool {
	for _, a := range m.allowS {
		if !at.Before(a.from) && (a.to.IsZero() || at.Before(a.to)) && a.match(s) {
			return true
		}
	}
	return false
}

// Start starts scraping, once now and then every interval.
func (m *Monitor) Start() { go m.loop() }

func (m *Monitor) loop() {
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

func (m *Monitor) ready() bool {
	code, _, err := m.agent.Get("/readyz")
	return err == nil && code == http.StatusOK
}

func (m *Monitor) scrapeOnce() {
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
		if !scrape.IsFinding(s) {
			continue
		}
		if !readyBefore && !readyAfter {
			m.preReady = append(m.preReady, fmt.Sprintf("[%s] %s", m.phase, s))
		}
		k := SeriesKey(s)
		record(m.seen, k, s, at, m.phase)
		if sev := Severity(s); (sev == finding.SevWarning || sev == finding.SevCritical) && s.Value > 0 && !m.allowedSeries(s, at) {
			record(m.stray, k, s, at, m.phase)
		}
	}
	for p, ss := range Grade(all) {
		if m.allowed(p, at) {
			continue
		}
		ps := m.pages[p]
		if ps == nil {
			ps = &pageSeen{first: at, firstPhase: m.phase, series: map[string]bool{}}
			m.pages[p] = ps
		}
		for _, s := range ss {
			ps.series[SeriesKey(s)] = true
		}
		ps.last, ps.lastPhase = at, m.phase
		ps.scrapes++
	}
}

func record(into map[string]*Observed, k string, s scrape.Series, at time.Time, phase string) {
	o := into[k]
	if o == nil {
		o = &Observed{First: at, FirstPhase: phase}
		into[k] = o
	}
	o.Series, o.Last, o.LastPhase = s, at, phase
	o.Scrapes++
}

// Finish stops the monitor after one last scrape.
func (m *Monitor) Finish() {
	m.stopOnce.Do(func() { close(m.stop) })
	<-m.done
}

// PreReadyFindings lists the findings served while /readyz answered not 200
// both before and after the scrape.
func (m *Monitor) PreReadyFindings() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.preReady...)
}

// SeriesKey is a series' name and labels (no value).
func SeriesKey(s scrape.Series) string {
	keys := slices.Sorted(maps.Keys(s.Labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, s.Labels[k]))
	}
	return s.Name + "{" + strings.Join(parts, ",") + "}"
}

// Seen returns every finding series seen so far, sorted by SeriesKey.
func (m *Monitor) Seen() []Observed {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Observed
	for _, k := range slices.Sorted(maps.Keys(m.seen)) {
		out = append(out, *m.seen[k])
	}
	return out
}

// Report lists every finding series seen, with the phases it was seen in and
// its last value.
func (m *Monitor) Report() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := slices.Sorted(maps.Keys(m.seen))
	var b strings.Builder
	fmt.Fprintf(&b, "%d scrapes (%d failed); %d distinct finding series:\n", m.scrapes, m.failed, len(keys))
	for _, k := range keys {
		o := m.seen[k]
		fmt.Fprintf(&b, "  %s  [%s .. %s, %d scrapes, last value %g]\n", k, o.FirstPhase, o.LastPhase, o.Scrapes, o.Series.Value)
	}
	return b.String()
}

// UnexpectedPages lists the page-grade findings seen outside every allowance.
func (m *Monitor) UnexpectedPages() []string {
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

// UnexpectedFindings lists the warning- and critical-grade finding series
// (non-zero) seen outside every AllowSeries window, whether or not they page.
func (m *Monitor) UnexpectedFindings() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.stray)) {
		o := m.stray[k]
		out = append(out, fmt.Sprintf("%s (%s): seen in %d scrapes, first in phase %q, last in phase %q",
			k, Severity(o.Series), o.Scrapes, o.FirstPhase, o.LastPhase))
	}
	return out
}

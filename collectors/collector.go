// Package collectors turns the model into Prometheus metrics at scrape time: every
// detector runs over a consistent read of the model and its findings are emitted as
// const metrics, so no series outlives the object or finding it describes.
package collectors

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/detect"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
)

// DefaultOverdueFactor is Config.OverdueFactor's default (--sync-overdue-factor).
const DefaultOverdueFactor = 3

// Config tunes what the findings collector emits.
type Config struct {
	// NoKeyLabel drops the key label: missing keys are reported as counts per Secret.
	NoKeyLabel bool
	// OverdueFactor: an ExternalSecret is overdue when its sync age exceeds this
	// multiple of its refreshInterval.
	OverdueFactor float64
	// Inventory enables driftwatch_secret_consumer_info (one series per consumed
	// Secret and workload).
	Inventory bool
	Now       func() time.Time
	// Logger receives a line when a detector fails.
	Logger *slog.Logger
	// FlapThreshold: flips within the history window that make a Secret
	// flapping (default detect.DefaultFlapThreshold).
	FlapThreshold int
	// NotConvergingThreshold: how long an Application may stay OutOfSync at
	// its synced revision before it is reported (default 10m).
	NotConvergingThreshold time.Duration
	// ESOServiceAccount is the ESO controller's ServiceAccount, which ambient
	// store auth runs as (default detect.DefaultESOServiceAccount).
	ESOServiceAccount model.Ref
	// BeforeDetector, when set, is called as each detector starts, inside
	// the containment of its failures: a panic there counts as the detector's
	// (tests use it to prove a failed detector reaches agent check, agent
	// lint, /api/v1/findings and the page).
	BeforeDetector func(detector string)
	// OwnsNamespace, when set (sharding), says which namespaces' series this
	// agent exports: a series whose namespace label another shard owns is
	// dropped, and per-namespace detectors skip those namespaces. The
	// namespace is the one of the object a finding is about (the
	// ServiceAccount of a workload-identity finding, the Secret a Helm release
	// or an Argo CD Application expects), so exactly one shard exports each
	// finding; "" is asked for cluster-scoped objects (ClusterSecretStores).
	// nil: every namespace.
	OwnsNamespace func(ns string) bool
	// Live, when set, says whether the agent's caches have finished their
	// initial sync (every started resource synced, or lost to a 403): until
	// it first returns true no detector runs, so a restarted agent serves no
	// finding computed from part of the cluster (its Secrets and Pods listed,
	// its ExternalSecrets not yet). The agent latches it: a CRD installed
	// later only holds back the detectors that need it. nil: live.
	Live func() bool
}

func (c *Config) defaults() {
	if c.OverdueFactor <= 0 {
		c.OverdueFactor = DefaultOverdueFactor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.FlapThreshold < 1 {
		c.FlapThreshold = detect.DefaultFlapThreshold
	}
	if c.NotConvergingThreshold <= 0 {
		c.NotConvergingThreshold = DefaultNotConvergingThreshold
	}
	if c.ESOServiceAccount.Namespace == "" {
		c.ESOServiceAccount.Namespace = detect.DefaultESOServiceAccount.Namespace
	}
	if c.ESOServiceAccount.Name == "" {
		c.ESOServiceAccount.Name = detect.DefaultESOServiceAccount.Name
	}
}

// detector is one entry of the registry: its name (the detector label), the
// resources without which it must stay silent, and how it emits.
type detector struct {
	name     string
	requires []model.Resource
	emit     func(e *emitter, v model.View, a model.Availability, now time.Time)
	// families are the metric families the detector emits, declared (catalog
	// entries) in its file, collectors/<name without underscores>.go.
	families []*prometheus.Desc
	// perNamespace detectors derive a namespace's findings only from that
	// namespace's records and the cluster-wide objects that stamp the global
	// generation (model/scope.go), and not from the time: they run once per
	// namespace on a namespace-restricted view, and a namespace's metrics are
	// reused until its generation changes. The others run on the whole model at
	// every scrape.
	perNamespace bool
}

// nsResult is one namespace's metrics from one per-namespace detector.
type nsResult struct {
	gen    model.Generation
	series int
	// recheck: a verdict depended on the time (a grace period) and may change
	// then without any write; zero when none did.
	recheck time.Time
	metrics []sample
	// findings are the typed findings among the metrics (Typed, agent check,
	// the findings page), kept compact: bounded by findings.
	findings []stored
	// silenced counts the findings driftwatch.io/ignore kept out.
	silenced int
	// text is the metrics in the text exposition format, per family without the
	// HELP/TYPE header (order: the families in order of first appearance),
	// encoded at the first WriteText that needs it. The metrics are then dropped:
	// /metrics only needs the text, and keeping both would double what the
	// cache holds. Collect (tests, agent check) recomputes a text-only result.
	text  map[*prometheus.Desc][]byte
	order []*prometheus.Desc
}

// Findings is the scrape-time collector of every detector's findings.
type Findings struct {
	store     *model.Store
	health    model.Health
	cfg       Config
	detectors []detector

	// mu serialises scrapes over the per-namespace results they reuse.
	mu sync.Mutex
	// cached: detector → namespace → result, valid for availability cachedAvail.
	cached      map[string]map[string]*nsResult
	cachedAvail string
	// evaluations counts per-namespace detector runs (reuse is the rest).
	evaluations map[string]uint64
	// byScrape and byRequest count evaluations of every detector for a
	// scrape and for a reader (Run, Latest); byAhead counts Prepare's
	// evaluations of the per-namespace detectors ahead of a scrape.
	byScrape, byRequest, byAhead uint64
	// panics counts contained detector failures.
	panics map[string]uint64
	// noSplit runs every detector on the whole model (tests compare both ways).
	noSplit bool

	// lines: emitter.lines, kept from one evaluation to the next;
	// lastSeries: how many series the last evaluation's emitter held.
	lines      *lineMemo
	lastSeries int

	// last is the most recent evaluation's findings (a scrape's or Run's),
	// which the findings page and the API read without taking mu (Latest).
	last atomic.Pointer[Evaluation]
	// refreshMu lets one reader of Latest at a time evaluate when the last
	// evaluation is too old; the others wait for its result.
	refreshMu sync.Mutex
}

// Evaluation is the typed findings of one evaluation of every detector: what
// a scrape exported, or what Run returned. It is shared between readers and
// must not be modified.
type Evaluation struct {
	// At is the evaluation's time (Config.Now).
	At time.Time
	// Findings are sorted as Run sorts them. Latest and Run fill them: the
	// evaluation a scrape leaves keeps its findings compact (the per-namespace
	// results' own, unsorted) until a reader asks, so the findings at rest
	// cost what the per-namespace cache holds, not a second sorted copy with
	// a label map per finding.
	Findings []finding.Finding
	// Failed names, sorted, the detectors that failed (a contained panic).
	Failed []string
	// Silenced counts the findings a driftwatch.io/ignore annotation kept out
	// (the sum of driftwatch_findings_silenced).
	Silenced int
	// avail is the availability signature the detectors ran under: an
	// evaluation made before a resource synced is not reused after.
	avail string
	// lazy holds the findings until materialize fills Findings.
	lazy *lazyFindings
}

// lazyFindings are an evaluation's findings in the order the detectors
// produced them, as slices shared with the per-namespace results (never
// modified).
type lazyFindings struct {
	once  sync.Once
	parts [][]stored
}

// materialize fills ev.Findings, sorted, from the compact findings (once;
// safe for concurrent readers).
func (ev *Evaluation) materialize() *Evaluation {
	if ev.lazy == nil {
		return ev
	}
	ev.lazy.once.Do(func() {
		n := 0
		for _, p := range ev.lazy.parts {
			n += len(p)
		}
		out := make([]finding.Finding, 0, n)
		for _, p := range ev.lazy.parts {
			for i := range p {
				out = append(out, p[i].finding())
			}
		}
		finding.Sort(out)
		ev.Findings = out
		ev.lazy.parts = nil
	})
	return ev
}

// stored is a finding as the collector keeps it between scrapes: its family,
// its label values in the family's order and what the detector added. It is a
// third of a finding.Finding with its label map; finding rebuilds that.
type stored struct {
	fam       *finding.Family
	detector  string
	values    []string
	value     float64
	evidence  string
	consumers []finding.Consumer
}

// compact stores fs (exactly sized: the cache keeps them).
func compact(fs []finding.Finding) []stored {
	if len(fs) == 0 {
		return nil
	}
	out := make([]stored, len(fs))
	for i := range fs {
		f := &fs[i]
		values := make([]string, len(f.Family.Labels))
		for j, l := range f.Family.Labels {
			values[j] = f.Labels[l]
		}
		out[i] = stored{fam: f.Family, detector: f.Detector, values: values, value: f.Value, evidence: f.Evidence, consumers: f.Consumers}
	}
	return out
}

// finding is s as the emitter made it (emitter.gauge).
func (s *stored) finding() finding.Finding {
	lm := make(map[string]string, len(s.values))
	for i, l := range s.fam.Labels {
		lm[l] = s.values[i]
	}
	f := finding.New(s.fam, s.detector, lm, s.value)
	f.Object, _ = s.fam.ObjectAt(s.values)
	f.Evidence, f.Consumers = s.evidence, s.consumers
	return f
}

// remember records an evaluation's findings for Latest (the caller holds mu):
// parts are the per-namespace results' findings and the others', in the
// order the detectors produced them.
func (f *Findings) remember(at time.Time, parts [][]stored, failed []string, silenced int) *Evaluation {
	failed = slices.Clone(failed)
	slices.Sort(failed)
	ev := &Evaluation{At: at, Failed: failed, Silenced: silenced, avail: f.cachedAvail, lazy: &lazyFindings{parts: parts}}
	f.last.Store(ev)
	return ev
}

// fresh returns the last evaluation when it is at most maxAge old and was made
// with the resources available now; nil otherwise.
func (f *Findings) fresh(maxAge time.Duration) *Evaluation {
	ev := f.last.Load()
	if ev == nil || f.cfg.Now().Sub(ev.At) > maxAge ||
		ev.avail != availSignature(f.availability()) {
		return nil
	}
	return ev
}

// Latest returns the findings of an evaluation at most maxAge old: the last
// scrape's when it is recent enough, else a new evaluation. It is what the
// findings page and /api/v1/findings read, so that however many people or
// scripts ask, the detectors run at most once per maxAge for them, and a
// scrape waits for at most one such evaluation (a reader that finds a scrape
// evaluating waits for that scrape's result instead of evaluating again).
// Prometheus scraping more often than maxAge serves every reader.
func (f *Findings) Latest(maxAge time.Duration) *Evaluation {
	if ev := f.fresh(maxAge); ev != nil {
		return ev.materialize()
	}
	f.refreshMu.Lock()
	defer f.refreshMu.Unlock()
	if ev := f.fresh(maxAge); ev != nil {
		return ev.materialize() // another reader evaluated meanwhile
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev := f.fresh(maxAge); ev != nil {
		return ev.materialize() // a scrape evaluated meanwhile
	}
	return f.runLocked().materialize()
}

// NewFindings builds the collector.
func NewFindings(store *model.Store, health model.Health, cfg Config) *Findings {
	cfg.defaults()
	f := &Findings{store: store, health: health, cfg: cfg, evaluations: map[string]uint64{}, panics: map[string]uint64{}}
	f.detectors = f.registry()
	return f
}

// availability is what the detectors may read now: nothing before the
// caches are live (Config.Live).
func (f *Findings) availability() model.Availability {
	if f.cfg.Live != nil && !f.cfg.Live() {
		return model.Availability{}
	}
	return model.AvailabilityOf(f.health.States())
}

// Skipped lists, sorted, the detectors that do not run now: a resource they
// need is not served, not permitted or not synced.
func (f *Findings) Skipped() []string {
	avail := f.availability()
	out := []string{}
	for _, d := range f.detectors {
		if !avail.All(d.requires...) {
			out = append(out, d.name)
		}
	}
	slices.Sort(out)
	return out
}

var (
	descDetectorEnabled = declare(finding.Family{Name: "driftwatch_detector_enabled",
		Help:   "1 when the detector runs: every resource it needs is served, permitted and synced.",
		Labels: []string{"detector"}, Kind: finding.KindHealth})
	descDetectorDuration = declare(finding.Family{Name: "driftwatch_detector_duration_seconds",
		Help:   "How long the detector took during this scrape.",
		Labels: []string{"detector"}, Kind: finding.KindHealth})
	descDetectorSuccess = declare(finding.Family{Name: "driftwatch_detector_success",
		Help:   "1 when the detector ran to the end during this scrape, 0 when it failed (a contained panic: its findings are missing).",
		Labels: []string{"detector"}, Kind: finding.KindHealth})
	descDetectorPanics = declare(finding.Family{Name: "driftwatch_detector_failures_total",
		Help:   "Detector runs that failed (a contained panic) since the agent started.",
		Labels: []string{"detector"}, Kind: finding.KindHealth, Type: finding.Counter})
	descEvaluations = declare(finding.Family{Name: "driftwatch_evaluations_total",
		Help: "Evaluations of every detector since the agent started, by what asked for them: scrape (/metrics), request (the findings page, " +
			"/secret/, /api/v1/findings and agent check, only when the last evaluation is older than --ui.max-age: they reuse it otherwise) " +
			"or ahead (the per-namespace detectors over the namespaces that changed, shortly before the next scrape is expected, " +
			"so that the scrape reuses them: --evaluate-ahead).",
		Labels: []string{"trigger"}, Kind: finding.KindHealth, Type: finding.Counter})
	descDetectorNSEvals = declare(finding.Family{Name: "driftwatch_detector_namespace_evaluations_total",
		Help:   "Namespaces a per-namespace detector evaluated; the other namespaces' results were reused because nothing in them changed.",
		Labels: []string{"detector"}, Kind: finding.KindHealth, Type: finding.Counter})
)

// Describe sends every descriptor the collector may emit.
func (f *Findings) Describe(ch chan<- *prometheus.Desc) { describe(collFindings, ch) }

// Collect runs every enabled detector over one consistent read of the model.
// Per-namespace detectors recompute only the namespaces written to since the
// previous scrape (and everything after a cluster-wide change or a change of
// availability); their other namespaces' metrics are reused. The metrics are the
// same as a full recomputation's: the tests compare both after random changes.
func (f *Findings) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	var reused [][]sample
	var found [][]stored
	silenced := 0
	f.byScrape++
	fresh := f.evaluate(true, false, func(r *nsResult) {
		reused = append(reused, r.metrics)
		found = append(found, r.findings)
		silenced += r.silenced
	})
	f.remember(fresh.at, append(found, compact(fresh.found)), fresh.failed, silenced+fresh.silencedTotal)
	f.mu.Unlock()
	for _, ms := range reused {
		for _, m := range ms {
			ch <- m.metric()
		}
	}
	for _, m := range fresh.buf {
		ch <- m.metric()
	}
}

// Typed runs every enabled detector like a scrape and returns the findings as
// values, sorted by severity (most urgent first), class, family and labels:
// the same findings Collect exports, with what each detector knew (evidence,
// consumers). agent check and the findings page read these, never the metric
// text.
func (f *Findings) Typed() []finding.Finding {
	return f.Run().Findings
}

// Run evaluates like a scrape and returns the evaluation: the typed findings
// (as Typed), the detectors that failed, sorted (a contained panic: their
// findings are missing, so a result built from the others is incomplete;
// agent check and agent lint exit 2 on one, /api/v1/findings and the page
// name them), and how many findings driftwatch.io/ignore kept out.
func (f *Findings) Run() Evaluation {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := f.runLocked().materialize()
	return Evaluation{At: ev.At, Findings: slices.Clone(ev.Findings), Failed: slices.Clone(ev.Failed), Silenced: ev.Silenced, avail: ev.avail}
}

// runLocked evaluates and remembers the findings (the caller holds mu).
func (f *Findings) runLocked() *Evaluation {
	var out [][]stored
	silenced := 0
	f.byRequest++
	e := f.evaluate(false, false, func(r *nsResult) {
		out = append(out, r.findings)
		silenced += r.silenced
	})
	return f.remember(e.at, append(out, compact(e.found)), e.failed, silenced+e.silencedTotal)
}

// evaluate runs the detectors (the caller holds f.mu). It hands each
// per-namespace result, computed now or reused, to result and returns the other
// metrics (cluster-wide detectors, detector_* gauges). ahead runs only the
// per-namespace detectors (Prepare): the returned emitter is then empty.
func (f *Findings) evaluate(needMetrics, ahead bool, result func(*nsResult)) *emitter {
	avail := f.availability()
	now := f.cfg.Now()
	if sig := availSignature(avail); sig != f.cachedAvail || f.cached == nil {
		f.cached, f.cachedAvail = map[string]map[string]*nsResult{}, sig
	}
	// Detectors run under the model's read lock; the metrics are sent and encoded
	// after it is released, so the informers' event handlers (which need the
	// write lock) wait only for the detectors, not for the encoding.
	e := &emitter{cfg: &f.cfg, at: now}
	if !ahead {
		if f.lines == nil {
			f.lines = newLineMemo()
		}
		e.lines = f.lines
		f.lines.begin()
		defer f.lines.end()
		// As many series as last time, without growing to them.
		e.buf = make([]sample, 0, f.lastSeries)
		defer func() { f.lastSeries = len(e.buf) }()
	}
	f.store.Read(func(v model.View) {
		for _, d := range f.detectors {
			if ahead {
				if d.perNamespace && avail.All(d.requires...) {
					f.emitPerNamespace(e, d, v, avail, now, false, result)
				}
				continue
			}
			enabled := avail.All(d.requires...)
			e.gauge(descDetectorEnabled, b2f(enabled), d.name)
			if !enabled {
				delete(f.cached, d.name)
				continue
			}
			start := time.Now()
			var ok bool
			if d.perNamespace && !f.noSplit {
				ok = f.emitPerNamespace(e, d, v, avail, now, needMetrics, result)
			} else {
				ok = f.run(e, d, v.At(now, nil), avail, now)
			}
			e.gauge(descDetectorSuccess, b2f(ok), d.name)
			if !ok {
				e.failed = append(e.failed, d.name)
			}
			e.gauge(descDetectorDuration, time.Since(start).Seconds(), d.name)
			e.counter(descDetectorPanics, float64(f.panics[d.name]), d.name)
			if d.perNamespace {
				e.counter(descDetectorNSEvals, float64(f.evaluations[d.name]), d.name)
			}
		}
	})
	if ahead {
		return e
	}
	e.detector = ""
	e.counter(descEvaluations, float64(f.byScrape), "scrape")
	e.counter(descEvaluations, float64(f.byRequest), "request")
	e.counter(descEvaluations, float64(f.byAhead), "ahead")
	return e
}

// run runs one detector's emit on e, containing a panic: the detector's partial
// output is dropped, the failure counted and logged, the other detectors go on.
func (f *Findings) run(e *emitter, d detector, v model.View, avail model.Availability, now time.Time) (ok bool) {
	nbuf, nfound := len(e.buf), len(e.found)
	defer func() {
		if p := recover(); p != nil {
			e.buf, e.found, e.silenced = e.buf[:nbuf], e.found[:nfound], nil
			f.panics[d.name]++
			f.cfg.Logger.Error("detector failed; its findings are dropped this scrape", "detector", d.name, "panic", fmt.Sprint(p))
			ok = false
		}
	}()
	e.start(v, d.name)
	if f.cfg.BeforeDetector != nil {
		f.cfg.BeforeDetector(d.name)
	}
	d.emit(e, v, avail, now)
	e.flushSilenced()
	return true
}

func (f *Findings) emitPerNamespace(e *emitter, d detector, v model.View, avail model.Availability, now time.Time,
	needMetrics bool, result func(*nsResult)) bool {
	prev := f.cached[d.name]
	next := make(map[string]*nsResult, len(prev))
	allOK := true
	for _, ns := range v.Namespaces() {
		if own := f.cfg.OwnsNamespace; own != nil && !own(ns) {
			continue // another shard's: it evaluates and exports it
		}
		gen := v.Generation(ns)
		r, ok := prev[ns]
		if !ok || r.gen != gen || needMetrics && r.metrics == nil && r.series > 0 ||
			!r.recheck.IsZero() && !now.Before(r.recheck) {
			f.evaluations[d.name]++
			sub := &emitter{cfg: e.cfg}
			var recheck time.Time
			if !f.run(sub, d, v.InNamespace(ns).At(now, &recheck), avail, now) {
				allOK = false // not cached: evaluated again next scrape
				continue
			}
			r = &nsResult{gen: gen, series: len(sub.buf), metrics: slices.Clip(sub.buf), findings: compact(sub.found), recheck: recheck,
				silenced: sub.silencedTotal}
		}
		next[ns] = r
		if r.series > 0 {
			result(r)
		}
	}
	f.cached[d.name] = next
	return allOK
}

// availSignature encodes which resources are available.
func availSignature(a model.Availability) string {
	var sb strings.Builder
	for _, r := range model.AllResources {
		if a[r] {
			sb.WriteString(string(r))
			sb.WriteByte(',')
		}
	}
	return sb.String()
}

type emitter struct {
	buf []sample
	cfg *Config
	// view and detector: for driftwatch.io/ignore (see gauge).
	view     model.View
	detector string
	// silenced counts, per namespace, the findings an ignore annotation
	// dropped (and the detector reported through silence); silencedTotal
	// sums what flushSilenced exported.
	silenced      map[string]int
	silencedTotal int
	// found are the typed findings among the series emitted.
	found []finding.Finding
	// failed names the detectors that failed, and at is the evaluation's
	// time (evaluate's emitter only).
	failed []string
	at     time.Time
	// lines memoizes the text before the value of the series gaugeOf emits
	// for an object the detector holds (evaluate's emitter only: the
	// cluster-wide detectors' series, encoded again at every scrape).
	lines *lineMemo
}

var descSilenced = declare(finding.Family{Name: "driftwatch_findings_silenced",
	Help: "Findings a driftwatch.io/ignore annotation (on the object, its namespace, or a pod that would have expected a key) " +
		"keeps out of the finding metrics, per detector and namespace: nothing is hidden silently.",
	Labels: []string{"detector", "namespace"}, Kind: finding.KindHealth})

func (e *emitter) start(v model.View, detector string) {
	e.view, e.detector, e.silenced = v, detector, nil
}

// silence counts n findings dropped by ignore annotations in namespace ns.
func (e *emitter) silence(ns string, n int) {
	if n <= 0 {
		return
	}
	if e.silenced == nil {
		e.silenced = map[string]int{}
	}
	e.silenced[ns] += n
}

func (e *emitter) flushSilenced() {
	nss := make([]string, 0, len(e.silenced))
	for ns := range e.silenced {
		if own := e.cfg.OwnsNamespace; own == nil || own(ns) {
			nss = append(nss, ns)
		}
	}
	slices.Sort(nss)
	for _, ns := range nss {
		e.buf = append(e.buf, newSample(descSilenced, familyOf[descSilenced], float64(e.silenced[ns]), []string{e.detector, ns}))
		e.silencedTotal += e.silenced[ns]
	}
	e.silenced = nil
}

// gauge emits a series of d's family (the family's declared type, gauge or
// counter), unless the object it is about, or its namespace, carries a
// driftwatch.io/ignore annotation naming the detector: then it is dropped, and
// counted when it is a finding. For a finding (not a family that restates
// another) it also records the typed finding and returns it, so the emitter
// can add the evidence and consumers; nil otherwise.
func (e *emitter) gauge(d *prometheus.Desc, v float64, labels ...string) *finding.Finding {
	return e.gaugeOf(d, nil, v, labels)
}

// gaugeOf is gauge for a series whose object's metadata the detector already
// holds (meta, non-nil): no lookup in the model per series.
func (e *emitter) gaugeOf(d *prometheus.Desc, meta *model.ObjectMeta, v float64, labels []string) *finding.Finding {
	fam := familyOf[d]
	if own := e.cfg.OwnsNamespace; own != nil {
		if i := slices.Index(fam.Labels, "namespace"); i >= 0 && !own(labels[i]) {
			return nil // another shard's namespace: that shard exports it
		}
	}
	obj, hasObject := fam.ObjectAt(labels)
	if e.detector != "" && hasObject {
		if meta == nil {
			meta, _ = e.view.Meta(obj.Kind, obj.Namespace, obj.Name)
		}
		if e.view.Ignores(obj.Namespace, meta, e.detector) {
			if fam.Kind == finding.KindFinding && fam.Restates == "" {
				e.silence(obj.Namespace, 1)
			}
			return nil
		}
	}
	if e.lines != nil && meta != nil {
		e.buf = append(e.buf, e.lines.sample(meta, d, fam, v, labels))
	} else {
		e.buf = append(e.buf, newSample(d, fam, v, labels))
	}
	if fam.Kind != finding.KindFinding || fam.Restates != "" || v == 0 {
		return nil
	}
	lm := make(map[string]string, len(labels))
	for i, l := range fam.Labels {
		lm[l] = labels[i]
	}
	f := finding.New(fam, e.detector, lm, v)
	f.Object = obj
	e.found = append(e.found, f)
	return &e.found[len(e.found)-1]
}

func (e *emitter) counter(d *prometheus.Desc, v float64, labels ...string) *finding.Finding {
	return e.gauge(d, v, labels...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// joinBounded joins names with commas, cut to at most max bytes on a name boundary.
func joinBounded(names []string, max int) string {
	var sb strings.Builder
	for i, n := range names {
		add := len(n)
		if i > 0 {
			add++
		}
		if sb.Len()+add > max {
			if sb.Len()+4 <= max {
				sb.WriteString(",...")
			}
			break
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(n)
	}
	return sb.String()
}

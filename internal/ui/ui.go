// Package ui serves driftwatch's pages for people and scripts: the findings
// page (/), the delivery path of any Secret (/secret/NS/NAME) and the findings
// as JSON (/api/v1/findings, the schema of `agent check --output json`,
// docs/findings-schema.md). Everything is rendered on the server with
// html/template: no JavaScript, no external asset, a strict
// Content-Security-Policy; the page reloads itself with a meta refresh. Like
// /metrics it shows names (namespaces, Secrets, keys, workloads), evidence
// sentences and commands, never a value; it shows nothing before the
// informers have synced.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/report"
)

// Findings is what the page reads findings from (collectors.Findings): the
// findings of an evaluation at most maxAge old and the detectors that failed
// during it, shared and never modified, and the detectors that do not run.
type Findings interface {
	Latest(maxAge time.Duration) *collectors.Evaluation
	Skipped() []string
}

// Defaults of Options.MaxAge and Options.MaxConcurrent.
const (
	DefaultMaxAge        = 10 * time.Second
	DefaultMaxConcurrent = 4
)

// Health says whether the informers have synced and which resources are
// available (kube.Manager).
type Health interface {
	Ready() bool
	States() []model.ResourceState
}

// Options configure the pages.
type Options struct {
	// RunbookBase prefixes runbook links (<base><AlertName>.md); default
	// alerts.RunbookBase, like `agent rules --runbook-base-url`.
	RunbookBase string
	// Refresh is the page's meta refresh interval (default 30 s; 0 keeps the
	// default, a negative value turns it off).
	Refresh time.Duration
	// NoSecretPage turns off /secret/NS/NAME (--ui.secret-page=false), which
	// shows the key names, writers and readers of any Secret the agent
	// watches, healthy ones included; the findings page then links to none.
	NoSecretPage bool
	// Version is shown in the footer.
	Version string
	// MaxAge is how old the findings a page or the API shows may be (default
	// DefaultMaxAge): they come from the last scrape when it is that recent,
	// else from one evaluation shared by every request meanwhile. However many
	// requests come, the detectors run at most once per MaxAge for them.
	MaxAge time.Duration
	// MaxConcurrent bounds the page, Secret page and API requests served at
	// once (default DefaultMaxConcurrent); one more is answered 429 with
	// Retry-After at once. /metrics and the probes are never limited.
	MaxConcurrent int
	// Now is the clock (tests).
	Now func() time.Time
}

// Server renders the pages.
type Server struct {
	store    *model.Store
	findings Findings
	health   Health
	opts     Options
	// slots holds a token per request being served (Options.MaxConcurrent).
	slots chan struct{}
	// rendered holds the findings page and API answers rendered from the
	// evaluation ev, by request (renderCached).
	renderMu sync.Mutex
	ev       *collectors.Evaluation
	rendered map[string][]byte
}

// maxRendered bounds the answers kept for one evaluation: the page and the
// API for all namespaces plus a few filtered ones.
const maxRendered = 8

// renderCached returns the answer render writes for the evaluation ev and the
// request key (everything else the answer depends on), rendered once per
// evaluation: people and scripts asking again between two evaluations cost a
// copy, not a template run. An answer that failed to render is not kept.
func (s *Server) renderCached(ev *collectors.Evaluation, key string, render func(io.Writer) error) ([]byte, error) {
	s.renderMu.Lock()
	if s.ev == ev {
		if b, ok := s.rendered[key]; ok {
			s.renderMu.Unlock()
			return b, nil
		}
	}
	s.renderMu.Unlock()
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	if s.ev != ev || len(s.rendered) >= maxRendered {
		s.ev, s.rendered = ev, map[string][]byte{}
	}
	s.rendered[key] = b
	return b, nil
}

// stateKey identifies what an answer shows besides the findings: the
// detectors that do not run and the resources' states.
func (s *Server) stateKey() string {
	return fmt.Sprint(s.findings.Skipped(), s.health.States())
}

// New returns a Server over the model, the findings and the informers' health.
func New(store *model.Store, findings Findings, health Health, opts Options) *Server {
	if opts.RunbookBase == "" {
		opts.RunbookBase = defaultRunbookBase
	}
	if !strings.HasSuffix(opts.RunbookBase, "/") {
		opts.RunbookBase += "/"
	}
	if opts.Refresh == 0 {
		opts.Refresh = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	return &Server{store: store, findings: findings, health: health, opts: opts, slots: make(chan struct{}, opts.MaxConcurrent)}
}

//go:embed templates/*.html templates/style.css
var files embed.FS

var (
	css = func() string {
		b, err := files.ReadFile("templates/style.css")
		if err != nil {
			panic(err)
		}
		return string(b)
	}()
	// csp allows nothing but the page's own stylesheet (by hash), images from
	// the origin and data: URIs, and forms posting to the origin. No script
	// runs: the page works, and is meant to be read, with JavaScript off.
	csp = "default-src 'none'; style-src 'sha256-" + hashOf(css) + "'; img-src 'self' data:; form-action 'self'; " +
		"base-uri 'none'; frame-ancestors 'none'"
	tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"lower": strings.ToLower,
		"short": shortName,
		"plural": func(n int, word string) string {
			if n == 1 {
				return "1 " + word
			}
			return strconv.Itoa(n) + " " + word + "s"
		},
		"secretURL":   secretURL,
		"maxPictures": func() int { return MaxPictures },
	}).ParseFS(files, "templates/*.html"))
)

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

// CSP is the Content-Security-Policy every page is served with.
func CSP() string { return csp }

// Handler serves /, /secret/NS/NAME (unless Options.NoSecretPage) and
// /api/v1/findings.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.limit(s.servePage))
	if !s.opts.NoSecretPage {
		mux.HandleFunc("/secret/{ns}/{name}", s.limit(s.serveSecret))
	}
	mux.HandleFunc("/api/v1/findings", s.limit(s.serveAPI))
	return mux
}

// limit serves h for at most Options.MaxConcurrent requests at once and
// answers the others 429 at once, so a flood of page or API requests costs a
// bounded share of the CPU and never queues up in front of a scrape.
func (s *Server) limit(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
			h(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "too many requests: the findings page and API serve "+strconv.Itoa(cap(s.slots))+
				" requests at a time (/metrics is not limited); retry in a second", http.StatusTooManyRequests)
		}
	}
}

// latest is the findings pages and the API show, and marks the response with
// their evaluation's time.
func (s *Server) latest(w http.ResponseWriter) *collectors.Evaluation {
	ev := s.findings.Latest(s.opts.MaxAge)
	if !ev.At.IsZero() {
		w.Header().Set("Last-Modified", ev.At.UTC().Format(http.TimeFormat))
	}
	return ev
}

func headers(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// waiting names the resources whose informers have not synced.
func (s *Server) waiting() string {
	var out []string
	for _, st := range s.health.States() {
		if st.Reason == "not_started" || st.Enabled && !st.Degraded && !st.Synced {
			out = append(out, string(st.Resource))
		}
	}
	return strings.Join(out, ", ")
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	q := r.URL.Query()
	failOn := finding.SevWarning
	if v := q.Get("fail_on"); v != "" {
		sev, err := finding.ParseSeverity(v)
		if err != nil {
			apiError(w, http.StatusBadRequest, "fail_on "+err.Error())
			return
		}
		failOn = sev
	}
	keep, err := nsFilter(q["namespace"])
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.health.Ready() {
		apiError(w, http.StatusServiceUnavailable, "waiting for informers to sync: "+s.waiting())
		return
	}
	ev := s.latest(w)
	key := fmt.Sprint("api", failOn, q["namespace"], s.stateKey())
	body, err := s.renderCached(ev, key, func(w io.Writer) error {
		rep := report.Build(ev.Findings, ev.Failed, s.findings.Skipped(), s.health.States(), failOn, keep)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "encoding the findings failed")
		return
	}
	headers(w, "application/json")
	_, _ = w.Write(body)
}

// MaxNamespaceFilter bounds the namespaces one /api/v1/findings request may
// name: a longer list is a 400, never a request that costs findings × names.
const MaxNamespaceFilter = 256

// nsFilter keeps the findings in the given namespaces (comma-separated or
// repeated), looked up in a set; nil when none is given. More than
// MaxNamespaceFilter names, repeats included, is an error.
func nsFilter(vals []string) (func(finding.Finding) bool, error) {
	nss := map[string]struct{}{}
	n := 0
	for _, v := range vals {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if n++; n > MaxNamespaceFilter {
				return nil, fmt.Errorf("namespace: more than %d names (comma-separated or repeated); ask for fewer, or for all without the parameter", MaxNamespaceFilter)
			}
			nss[p] = struct{}{}
		}
	}
	if len(nss) == 0 {
		return nil, nil
	}
	return func(f finding.Finding) bool { _, ok := nss[f.Object.Namespace]; return ok }, nil
}

func apiError(w http.ResponseWriter, code int, msg string) {
	headers(w, "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// Card is one finding on the page, or several of one family about one object
// (the missing keys of one Secret from one source).
type Card struct {
	ID        string
	Metric    string
	Help      string
	Severity  string
	Object    finding.Object
	Items     []Item
	Consumers []finding.Consumer
	Runbook   string
	Alert     string
	Commands  []Command
	Paths     []PathView
}

// Item is one series of a card: its distinguishing labels and evidence.
type Item struct {
	Details  string
	Evidence string
}

// PathView is a delivery path picture and the Secret it is about.
type PathView struct {
	Namespace, Name string
	SVG             template.HTML
}

// ClassGroup holds a failure class's cards by severity.
type ClassGroup struct {
	Name       string
	ID         string
	Count      int
	Severities []SevGroup
}

// SevGroup is the cards of one severity.
type SevGroup struct {
	Severity string
	Cards    []*Card
}

// PageData is what the findings page template renders.
type PageData struct {
	CSS        template.CSS
	Refresh    int
	Ready      bool
	Waiting    string
	Namespace  string
	Namespaces []string
	Counts     map[string]int
	Total      int
	Classes    []ClassGroup
	Skipped    []string
	// Failed names the detectors that failed: their findings are missing.
	Failed      []string
	Unavailable []string
	Generated   string
	Version     string
	// PicturesOmitted counts the cards past MaxPictures drawn without one.
	PicturesOmitted int
	// SecretPages: /secret/NS/NAME is served, so Secrets link to it.
	SecretPages bool
}

// maxPathsPerCard bounds the pictures on one card (a store's ExternalSecrets);
// MaxPictures bounds them on one page (the most urgent cards come first): the
// page of a cluster with thousands of findings stays a few hundred kilobytes,
// and the other cards link to their Secret's page.
const (
	maxPathsPerCard = 3
	MaxPictures     = 100
)

// Page builds the findings page's data from typed findings, keeping those in
// namespace ns ("" for all).
func (s *Server) Page(typed []finding.Finding, ns string) PageData {
	d := PageData{CSS: template.CSS(css), Refresh: int(s.opts.Refresh / time.Second), Ready: true, Namespace: ns,
		Counts: map[string]int{"critical": 0, "warning": 0, "info": 0}, Generated: s.opts.Now().UTC().Format(time.RFC3339),
		Version: s.opts.Version, SecretPages: !s.opts.NoSecretPage}
	if d.Refresh < 0 {
		d.Refresh = 0
	}
	nsSet := map[string]bool{}
	var kept []finding.Finding
	for _, f := range typed {
		if f.Object.Namespace != "" {
			nsSet[f.Object.Namespace] = true
		}
		if ns == "" || f.Object.Namespace == ns {
			kept = append(kept, f)
		}
	}
	for n := range nsSet {
		d.Namespaces = append(d.Namespaces, n)
	}
	sort.Strings(d.Namespaces)
	rep := kept
	paths := map[model.Ref]template.HTML{}
	classIdx := map[string]int{}
	pictures := 0
	s.store.Read(func(v model.View) {
		var last *Card
		for i, f := range rep {
			d.Counts[string(f.Severity)]++
			d.Total++
			if last != nil && last.Metric == f.Metric && last.Object == f.Object && last.Severity == string(f.Severity) {
				last.Items = append(last.Items, Item{Details: detailsOf(f), Evidence: f.Evidence})
				last.Consumers = mergeConsumers(last.Consumers, f.Consumers)
				for _, c := range finding.For(&f, writersOf(v, f)) {
					if !slices.Contains(last.Commands, c) {
						last.Commands = append(last.Commands, c)
					}
				}
				continue
			}
			c := &Card{ID: "f" + strconv.Itoa(i), Metric: f.Metric, Help: meaning(kept[i].Family.Help), Severity: string(f.Severity),
				Object: f.Object, Items: []Item{{Details: detailsOf(f), Evidence: f.Evidence}},
				Consumers: slices.Clone(f.Consumers), Commands: finding.For(&f, writersOf(v, f))}
			if a := RunbookAlert(f); a != "" {
				c.Alert, c.Runbook = a, s.opts.RunbookBase+a+".md"
			}
			refs := secretsOf(v, kept[i], maxPathsPerCard)
			if len(refs) > 0 && pictures >= MaxPictures {
				d.PicturesOmitted++
			}
			for _, ref := range refs {
				if pictures >= MaxPictures {
					c.Paths = append(c.Paths, PathView{Namespace: ref.Namespace, Name: ref.Name})
					continue
				}
				pictures++
				svg, ok := paths[ref]
				if !ok {
					svg = buildPath(v, ref.Namespace, ref.Name, typed).SVG()
					paths[ref] = svg
				}
				c.Paths = append(c.Paths, PathView{Namespace: ref.Namespace, Name: ref.Name, SVG: svg})
			}
			last = c
			ci, ok := classIdx[f.Class]
			if !ok {
				ci = len(d.Classes)
				classIdx[f.Class] = ci
				d.Classes = append(d.Classes, ClassGroup{Name: f.Class, ID: "class-" + slug(f.Class)})
			}
			g := &d.Classes[ci]
			g.Count++
			if n := len(g.Severities); n == 0 || g.Severities[n-1].Severity != c.Severity {
				g.Severities = append(g.Severities, SevGroup{Severity: c.Severity})
			}
			sg := &g.Severities[len(g.Severities)-1]
			sg.Cards = append(sg.Cards, c)
		}
	})
	// Counts per class count findings, not cards.
	for i := range d.Classes {
		n := 0
		for _, sg := range d.Classes[i].Severities {
			for _, c := range sg.Cards {
				n += len(c.Items)
			}
		}
		d.Classes[i].Count = n
	}
	return d
}

func writersOf(v model.View, f finding.Finding) []string {
	if f.Object.Kind != "Secret" {
		return nil
	}
	var out []string
	for _, e := range v.ExternalSecretsTargeting(f.Object.Namespace, f.Object.Name) {
		out = append(out, e.Name)
	}
	return out
}

func mergeConsumers(a, b []finding.Consumer) []finding.Consumer {
	for _, c := range b {
		i := slices.IndexFunc(a, func(x finding.Consumer) bool { return x.Kind == c.Kind && x.Name == c.Name })
		if i < 0 {
			a = append(a, c)
		} else if a[i].Pods < c.Pods {
			a[i].Pods = c.Pods
		}
	}
	return a
}

// detailsOf lists the labels that do not name the object, as k=v.
func detailsOf(f finding.Finding) string {
	var ks []string
	for k, v := range f.Labels {
		if k == "namespace" || v == "" || v == f.Object.Name && (k == "secret" || k == "externalsecret" ||
			k == "serviceaccount" || k == "store" || k == "application" || k == "name") {
			continue
		}
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, k+"="+f.Labels[k])
	}
	return strings.Join(parts, " ")
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// meaning turns a family's help (written for a metric: "1 when ...") into a
// sentence about the finding.
func meaning(help string) string {
	for _, p := range []string{"1 when ", "1 for each ", "1 if "} {
		if rest, ok := strings.CutPrefix(help, p); ok {
			if p == "1 for each " {
				rest = "For each " + rest
			}
			r := []rune(rest)
			if len(r) > 0 && r[0] >= 'a' && r[0] <= 'z' {
				r[0] -= 'a' - 'A'
			}
			return string(r)
		}
	}
	return help
}

func shortName(metric string) string { return strings.TrimPrefix(metric, "driftwatch_") }

func secretURL(ns, name string) string {
	return "/secret/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	ns := strings.TrimSpace(r.URL.Query().Get("namespace"))
	if !s.health.Ready() {
		d := PageData{CSS: template.CSS(css), Refresh: 5, Waiting: s.waiting(), Namespace: ns,
			Generated: s.opts.Now().UTC().Format(time.RFC3339), Version: s.opts.Version}
		headers(w, "text/html; charset=utf-8")
		if err := RenderPage(w, d); err != nil {
			// Headers are sent; the truncated page says so at its end.
			_, _ = w.Write([]byte("<p>rendering failed</p>"))
		}
		return
	}
	ev := s.latest(w)
	body, err := s.renderCached(ev, fmt.Sprint("page", ns, s.stateKey()), func(w io.Writer) error {
		d := s.Page(ev.Findings, ns)
		d.Skipped, d.Failed = s.findings.Skipped(), ev.Failed
		if !ev.At.IsZero() {
			d.Generated = ev.At.UTC().Format(time.RFC3339)
		}
		for _, st := range s.health.States() {
			if !st.Available() && st.Reason != "not_watched" {
				d.Unavailable = append(d.Unavailable, string(st.Resource)+"="+st.Reason)
			}
		}
		return RenderPage(w, d)
	})
	if err != nil {
		http.Error(w, "rendering the findings page failed", http.StatusInternalServerError)
		return
	}
	headers(w, "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// RenderPage writes the findings page.
func RenderPage(w io.Writer, d PageData) error { return tmpl.ExecuteTemplate(w, "page.html", d) }

// SecretData is what the Secret page template renders.
type SecretData struct {
	CSS       template.CSS
	Refresh   int
	Ready     bool
	Waiting   string
	Path      Path
	SVG       template.HTML
	Findings  []finding.Finding
	Generated string
	Version   string
}

func (s *Server) serveSecret(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	d := SecretData{CSS: template.CSS(css), Refresh: int(s.opts.Refresh / time.Second),
		Generated: s.opts.Now().UTC().Format(time.RFC3339), Version: s.opts.Version}
	if d.Refresh < 0 {
		d.Refresh = 0
	}
	d.Path = Path{Namespace: ns, Name: name}
	code := http.StatusOK
	if !s.health.Ready() {
		d.Waiting, d.Refresh = s.waiting(), 5
	} else {
		d.Ready = true
		ev := s.latest(w)
		if !ev.At.IsZero() {
			d.Generated = ev.At.UTC().Format(time.RFC3339)
		}
		typed := ev.Findings
		s.store.Read(func(v model.View) {
			d.Path = buildPath(v, ns, name, typed)
			for _, f := range typed {
				if slices.Contains(secretsOf(v, f, 1000), model.Ref{Namespace: ns, Name: name}) {
					d.Findings = append(d.Findings, f)
				}
			}
		})
		p := d.Path
		if !p.Exists && len(p.ExternalSecrets) == 0 && len(p.Workloads) == 0 && len(p.Expectations) == 0 && len(d.Findings) == 0 {
			code = http.StatusNotFound
		} else {
			d.SVG = p.SVG()
		}
	}
	headers(w, "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = tmpl.ExecuteTemplate(w, "secret.html", d)
}

package ui_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/alerts"
	"github.com/driftwatch/driftwatch/collectors"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/agent"
	"github.com/driftwatch/driftwatch/internal/cli"
	"github.com/driftwatch/driftwatch/internal/demo"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/ui"
)

// demoAgent runs the agent against the embedded demo cluster (fake clients)
// with the UI on, until the test ends, and returns its handler once synced.
func demoAgent(t *testing.T) (*agent.Agent, http.Handler) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := demo.New(log)
	cfg := agent.Config{Logger: log, DiscoveryInterval: time.Second, Web: agent.WebConfig{UI: true}}
	a := agent.New(d.Clients(), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for !a.Manager.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("demo informers did not sync")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return a, a.Handler()
}

func fetch(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// demoValues are the values of every Secret the demo seeds (and their base64
// forms), which no page may contain.
func demoValues(t *testing.T) []string {
	t.Helper()
	core, _ := demo.Scenario(time.Now())
	var out []string
	for _, o := range core {
		s, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		for _, v := range s.Data {
			if len(v) >= 8 { // shorter demo values equal object names (orders, ledger)
				out = append(out, string(v), base64.StdEncoding.EncodeToString(v))
			}
		}
		for _, v := range s.StringData {
			if len(v) >= 8 { // shorter demo values equal object names (orders, ledger)
				out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the demo seeds no Secret values to look for")
	}
	return out
}

func TestFindingsPageShowsEveryDemoFinding(t *testing.T) {
	a, h := demoAgent(t)
	var page string
	classes := map[string]bool{}
	// The page and Typed evaluate apart, each at its own time: evidence that
	// states a duration ("OutOfSync for 20m3s") differs between the two when a
	// second ticks in between (seen beside a loaded machine's bench). Such a
	// pair is read again; a card or evidence missing from three pairs fails.
	for attempt := 1; ; attempt++ {
		rec := fetch(t, h, "/")
		if rec.Code != http.StatusOK {
			t.Fatalf("GET / = %d", rec.Code)
		}
		page = rec.Body.String()
		typed := a.Findings.Typed()
		if len(typed) == 0 {
			t.Fatal("the demo has no findings")
		}
		var lacks []string
		for _, f := range typed {
			classes[f.Family.Class] = true
			obj := `data-metric="` + f.Family.Name + `" data-object="` + f.Object.Kind + "/" + f.Object.Namespace + "/" + f.Object.Name + `"`
			if !strings.Contains(page, obj) {
				lacks = append(lacks, fmt.Sprintf("no card for %s %s %s", f.Family.Name, f.Object.Kind, f.Object))
			}
			if f.Evidence != "" && !strings.Contains(page, template(f.Evidence)) {
				lacks = append(lacks, fmt.Sprintf("%s %s: evidence %q not on the page", f.Family.Name, f.Object, f.Evidence))
			}
		}
		if len(lacks) == 0 {
			break
		}
		if attempt == 3 {
			t.Fatalf("in three reads of the page and the findings:\n%s", strings.Join(lacks, "\n"))
		}
	}
	for c := range classes {
		if !strings.Contains(page, ">"+template(c)+" <span") {
			t.Errorf("no section for class %q", c)
		}
	}
	// The missing key of the demo's Ready-but-short Secret, in its picture.
	svg := regexp.MustCompile(`(?s)<svg[^>]*aria-label="Delivery path of Secret shop/payments-api[^"]*".*?</svg>`).FindString(page)
	if svg == "" {
		t.Fatal("no delivery path picture of shop/payments-api")
	}
	for _, want := range []string{">missing: STRIPE_KEY</text>", ">ExternalSecret</text>", ">SecretStore</text>", ">checkout</text>", `class="e bad"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("payments-api picture lacks %q", want)
		}
	}
	// Self-refresh, the namespace filter form, runbook links.
	for _, want := range []string{`<meta http-equiv="refresh" content="30">`, `<form method="get" action="/">`,
		`<option value="shop"`, `href="` + alerts.RunbookBase + `DriftwatchSecretMissingKeyConsumed.md"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// template escapes s as html/template does in text.
func template(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;")
	return r.Replace(s)
}

func TestPageIsSelfContainedUnderAStrictCSP(t *testing.T) {
	_, h := demoAgent(t)
	for _, path := range []string{"/", "/?namespace=shop", "/secret/shop/payments-api", "/secret/healthy/web-config"} {
		rec := fetch(t, h, path)
		body := rec.Body.String()
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src 'none'; ") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("%s: want one <style>, got %d", path, len(m))
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q does not allow the page's stylesheet (%s)", path, csp, want)
		}
		for _, bad := range []string{"<script", " style=", "src=\"http", "src='http", "@import", "url(http", "<link rel=\"stylesheet"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: page contains %q", path, bad)
			}
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, rec.Header())
		}
	}
}

func TestPagesAndAPINeverCarryAValue(t *testing.T) {
	_, h := demoAgent(t)
	values := demoValues(t)
	for _, path := range []string{"/", "/?namespace=shop", "/api/v1/findings", "/secret/shop/payments-api",
		"/secret/shop/session-key", "/secret/healthy/web-config", "/secret/shop/web-config", "/secret/shop/ledger-creds"} {
		body := fetch(t, h, path).Body.String()
		for _, v := range values {
			if strings.Contains(body, v) {
				t.Errorf("%s carries a Secret value (%d bytes)", path, len(v))
			}
		}
	}
}

func TestAPIServesTheCheckSchema(t *testing.T) {
	_, h := demoAgent(t)
	rec := fetch(t, h, "/api/v1/findings")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/findings = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var api report.Report
	if err := dec.Decode(&api); err != nil {
		t.Fatalf("the API's document is not report.Report: %v", err)
	}
	// agent check --output json against the same demo cluster.
	var out, errb bytes.Buffer
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	code := cli.CheckWith([]string{"--output", "json"}, &out, &errb, func(string, string) (agent.Clients, error) {
		return demo.New(log).Clients(), nil
	})
	if code != cli.ExitFinding {
		t.Fatalf("check exit %d: %s", code, errb.String())
	}
	var chk cli.CheckReport
	if err := json.Unmarshal(out.Bytes(), &chk); err != nil {
		t.Fatal(err)
	}
	key := func(f finding.Finding) string {
		b, _ := json.Marshal(f.Labels)
		return f.Metric + " " + f.Object.String() + " " + string(b)
	}
	var a, c []string
	for _, f := range api.Findings {
		a = append(a, key(f))
	}
	for _, f := range chk.Findings {
		c = append(c, key(f))
	}
	// The demo's activities (flips) run only with d.Run, which neither side
	// starts here, so both see the seeded state.
	if !slices.Equal(a, c) {
		t.Errorf("API findings differ from agent check's:\nAPI:   %v\ncheck: %v", a, c)
	}
	if api.Result != chk.Result || api.FailOn != "warning" {
		t.Errorf("result %s/%s vs check %s", api.Result, api.FailOn, chk.Result)
	}

	// Namespace filter.
	var shop report.Report
	if err := json.Unmarshal(fetch(t, h, "/api/v1/findings?namespace=shop").Body.Bytes(), &shop); err != nil {
		t.Fatal(err)
	}
	if len(shop.Findings) == 0 || len(shop.Findings) >= len(api.Findings) {
		t.Errorf("namespace=shop kept %d of %d findings", len(shop.Findings), len(api.Findings))
	}
	for _, f := range shop.Findings {
		if f.Object.Namespace != "shop" {
			t.Errorf("namespace=shop served %s", f.Object)
		}
	}
	if rec := fetch(t, h, "/api/v1/findings?fail_on=bogus"); rec.Code != http.StatusBadRequest {
		t.Errorf("fail_on=bogus: %d", rec.Code)
	}
	var crit report.Report
	_ = json.Unmarshal(fetch(t, h, "/api/v1/findings?fail_on=critical&namespace=healthy").Body.Bytes(), &crit)
	if crit.Result != "pass" || len(crit.Findings) != 0 {
		t.Errorf("namespace=healthy: %s with %d findings", crit.Result, len(crit.Findings))
	}
}

func TestSecretPageIsTheInventory(t *testing.T) {
	_, h := demoAgent(t)
	rec := fetch(t, h, "/secret/healthy/web-config")
	if rec.Code != 200 {
		t.Fatalf("GET /secret/healthy/web-config = %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{">web</text>", ">2 pods · env, envFrom</text>", ">ExternalSecret</text>", ">vault</text>",
		"No finding about this Secret.", "<code>A</code>, <code>B</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("healthy Secret page lacks %q", want)
		}
	}
	if strings.Contains(body, `class="n bad"`) || strings.Contains(body, `class="e bad"`) {
		t.Error("a healthy Secret's picture marks something broken")
	}
	if rec := fetch(t, h, "/secret/nowhere/nothing"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown Secret: %d", rec.Code)
	}
	if rec := fetch(t, h, "/secret/shop/billing-db"); rec.Code != 200 || !strings.Contains(rec.Body.String(), ">absent</text>") {
		t.Errorf("absent Secret with a writer: %d", rec.Code)
	}
}

// A Secret read only as an imagePullSecret has a page: the workloads that
// pull with it, by that way, reading no key into a container.
func TestSecretPageNamesImagePullReaders(t *testing.T) {
	st := mt.NewStore(t, mt.Secret("shop", "regcred", ".dockerconfigjson"),
		mt.DeployPod("shop", "web", 0, mt.ImagePull("regcred")), mt.DeployPod("shop", "web", 1, mt.ImagePull("regcred")))
	h := ui.New(st, staticFindings{}, ready{}, ui.Options{}).Handler()
	rec := fetch(t, h, "/secret/shop/regcred")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, ">web</text>") || !strings.Contains(body, ">2 pods · imagePullSecret</text>") {
		t.Fatalf("GET /secret/shop/regcred = %d; want Deployment web, 2 pods, by imagePullSecret:\n%s", rec.Code, body)
	}
	if strings.Contains(body, "(all keys)") || strings.Contains(body, `class="n bad"`) {
		t.Error("an image pull reads no key into a container, and nothing is broken")
	}
}

// ?namespace= takes at most ui.MaxNamespaceFilter names, repeats included:
// beyond that a 400 that says why, before any finding is looked at.
func TestAPINamespaceFilterIsCapped(t *testing.T) {
	_, h := demoAgent(t)
	names := func(n int, name func(int) string) string {
		ns := make([]string, n)
		for i := range ns {
			ns[i] = name(i)
		}
		return strings.Join(ns, ",")
	}
	for _, q := range []string{
		names(ui.MaxNamespaceFilter+1, func(int) string { return "shop" }),
		names(ui.MaxNamespaceFilter+1, func(i int) string { return fmt.Sprintf("ns-%d", i) }),
		names(ui.MaxNamespaceFilter, func(int) string { return "a" }) + "&namespace=shop",
	} {
		rec := fetch(t, h, "/api/v1/findings?namespace="+q)
		var e struct{ Error string }
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != http.StatusBadRequest || !strings.Contains(e.Error, fmt.Sprintf("more than %d", ui.MaxNamespaceFilter)) {
			t.Errorf("%d names: %d %q, want 400 naming the cap", strings.Count(q, ",")+1, rec.Code, e.Error)
		}
	}
	// At the cap, with repeats: served, and filtered as one name.
	var shop, capped report.Report
	_ = json.Unmarshal(fetch(t, h, "/api/v1/findings?namespace=shop").Body.Bytes(), &shop)
	rec := fetch(t, h, "/api/v1/findings?namespace="+names(ui.MaxNamespaceFilter, func(i int) string { return []string{"shop", "elsewhere"}[i%2] }))
	if err := json.Unmarshal(rec.Body.Bytes(), &capped); rec.Code != 200 || err != nil || len(capped.Findings) == 0 ||
		len(capped.Findings) != len(shop.Findings) {
		t.Errorf("%d names, shop among them: %d, %d findings; namespace=shop alone: %d", ui.MaxNamespaceFilter, rec.Code,
			len(capped.Findings), len(shop.Findings))
	}
}

// --ui.secret-page=false: /secret/NS/NAME is not served and the findings
// page, pictures included, links to none.
func TestSecretPageOff(t *testing.T) {
	a, _ := demoAgent(t)
	typed := a.Findings.Typed()
	on := ui.New(a.Store, staticFindings(typed), ready{}, ui.Options{}).Handler()
	off := ui.New(a.Store, staticFindings(typed), ready{}, ui.Options{NoSecretPage: true}).Handler()
	if rec := fetch(t, on, "/"); !strings.Contains(rec.Body.String(), `href="/secret/`) {
		t.Fatal("control: the findings page links to no Secret page")
	}
	if rec := fetch(t, off, "/secret/healthy/web-config"); rec.Code != http.StatusNotFound {
		t.Errorf("/secret/ with the page off: %d", rec.Code)
	}
	rec := fetch(t, off, "/")
	if body := rec.Body.String(); rec.Code != 200 || strings.Contains(body, "/secret/") || !strings.Contains(body, "Delivery path of Secret ") ||
		!strings.Contains(body, "<svg") {
		t.Errorf("findings page with the Secret page off: %d; links to /secret/ or lost its pictures", rec.Code)
	}
	if rec := fetch(t, off, "/api/v1/findings"); rec.Code != 200 {
		t.Errorf("the API with the Secret page off: %d", rec.Code)
	}
}

func TestNothingBeforeSync(t *testing.T) {
	st := model.NewStore(nil)
	s := ui.New(st, staticFindings{}, notReady{}, ui.Options{})
	h := s.Handler()
	rec := fetch(t, h, "/")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `id="waiting"`) || strings.Contains(rec.Body.String(), "<article") {
		t.Errorf("page before sync: %d\n%s", rec.Code, rec.Body.String())
	}
	if rec := fetch(t, h, "/api/v1/findings"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("API before sync: %d", rec.Code)
	}
}

func TestUIOff(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := agent.New(demo.New(log).Clients(), agent.Config{Logger: log})
	h := a.Handler()
	if rec := fetch(t, h, "/"); !strings.HasPrefix(rec.Body.String(), "driftwatch: /metrics") {
		t.Errorf("--ui=false: / = %q", rec.Body.String())
	}
	for _, p := range []string{"/api/v1/findings", "/secret/shop/payments-api"} {
		if rec := fetch(t, h, p); rec.Code != http.StatusNotFound {
			t.Errorf("--ui=false: %s = %d", p, rec.Code)
		}
	}
}

// Every command the page can show, for every finding family, passes the
// check the runbooks pass; and that check does catch value-printing commands.
func TestCommandsPrintNoValues(t *testing.T) {
	for _, leak := range []string{
		"kubectl -n shop get secret api -o json",
		"kubectl -n shop get secret api -o jsonpath='{.data.TOKEN}' | base64 -d",
		"kubectl -n shop get secret api -o jsonpath='{.data}'",
		"kubectl -n shop get secret api -o json | jq '.data.TOKEN'",
	} {
		if alerts.CommandLeak(leak) == "" {
			t.Errorf("CommandLeak misses %q", leak)
		}
	}
	n := 0
	for _, fam := range append(finding.Catalog(), finding.LintFamilies()...) {
		if fam.Kind != finding.KindFinding {
			continue
		}
		labels := map[string]string{}
		for _, l := range fam.Labels {
			labels[l] = "x-" + l
		}
		labels["source"], labels["kind"], labels["workload_kind"] = "externalsecret", "Secret", "Deployment"
		for _, kind := range []string{"Secret", "ExternalSecret", "ClusterSecretStore"} {
			labels["kind"] = kind
			f := finding.Finding{Family: fam, Metric: fam.Name, Class: fam.Class, Severity: fam.Severity, Labels: labels,
				Object:    finding.Object{Kind: "Secret", Namespace: "ns", Name: "name"},
				Consumers: []finding.Consumer{{Kind: "Deployment", Name: "web", Pods: 2}, {Kind: "StatefulSet", Name: "db", Pods: 1}}}
			for _, src := range []string{"pod", "externalsecret", "helm"} {
				labels["source"] = src
				cmds := finding.For(&f, []string{"es-1"})
				if len(cmds) == 0 {
					t.Errorf("%s: no command", fam.Name)
				}
				for _, c := range cmds {
					n++
					if why := alerts.CommandLeak(c.Text); why != "" {
						t.Errorf("%s: %q %s", fam.Name, c.Text, why)
					}
				}
			}
		}
	}
	t.Logf("%d commands checked", n)
}

type staticFindings []finding.Finding

func (s staticFindings) Latest(time.Duration) *collectors.Evaluation {
	return &collectors.Evaluation{Findings: s}
}
func (staticFindings) Skipped() []string { return nil }

type notReady struct{}

func (notReady) Ready() bool { return false }
func (notReady) States() []model.ResourceState {
	return []model.ResourceState{{Resource: model.ResSecrets, Enabled: true}}
}

// failedFindings: no finding, and a detector that failed.
type failedFindings struct{}

func (failedFindings) Latest(time.Duration) *collectors.Evaluation {
	return &collectors.Evaluation{Failed: []string{"flips"}}
}
func (failedFindings) Skipped() []string { return nil }

// A detector that failed is named by the API (result error) and the page:
// "no findings" must not read as "nothing wrong" when a detector did not run.
func TestFailedDetectorIsNamed(t *testing.T) {
	st := mt.NewStore(t)
	h := ui.New(st, failedFindings{}, ready{}, ui.Options{}).Handler()
	var api report.Report
	rec := fetch(t, h, "/api/v1/findings")
	if err := json.Unmarshal(rec.Body.Bytes(), &api); err != nil {
		t.Fatal(err)
	}
	if api.Result != "error" || !slices.Equal(api.FailedDetectors, []string{"flips"}) {
		t.Errorf("API: result %s, failed %v", api.Result, api.FailedDetectors)
	}
	if body := fetch(t, h, "/").Body.String(); !strings.Contains(body, `id="failed-detectors"`) || !strings.Contains(body, "flips") {
		t.Errorf("the page does not name the failed detector:\n%s", body)
	}
}

// blockingFindings holds every Latest until release is closed.
type blockingFindings struct {
	entered chan struct{}
	release chan struct{}
}

func (b blockingFindings) Latest(time.Duration) *collectors.Evaluation {
	b.entered <- struct{}{}
	<-b.release
	return &collectors.Evaluation{}
}
func (blockingFindings) Skipped() []string { return nil }

// Page and API requests beyond MaxConcurrent are answered 429 at once, with
// Retry-After, instead of queueing; a slot freed serves the next one.
func TestConcurrentRequestsAreLimited(t *testing.T) {
	st := mt.NewStore(t)
	b := blockingFindings{entered: make(chan struct{}, 2), release: make(chan struct{})}
	srv := httptest.NewServer(ui.New(st, b, ready{}, ui.Options{MaxConcurrent: 2}).Handler())
	defer srv.Close()
	done := make(chan int, 2)
	for _, p := range []string{"/", "/api/v1/findings"} {
		go func() {
			resp, err := http.Get(srv.URL + p)
			if err != nil {
				done <- 0
				return
			}
			_ = resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	<-b.entered
	<-b.entered // both slots are taken
	for _, p := range []string{"/", "/api/v1/findings", "/secret/app/db"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s with every slot taken: %d, Retry-After %q (%s)", p, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	close(b.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a request holding a slot got %d", code)
		}
	}
	if resp, err := http.Get(srv.URL + "/api/v1/findings"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slots were freed: %v %v", resp, err)
	}
}

// countingFindings returns ev and counts the calls.
type countingFindings struct {
	ev    *collectors.Evaluation
	calls *int
}

func (c countingFindings) Latest(time.Duration) *collectors.Evaluation { *c.calls++; return c.ev }
func (countingFindings) Skipped() []string                             { return nil }

// The page and the API rendered from one evaluation are rendered once and
// served again as they were; a new evaluation is rendered anew. The answer
// says when its findings were evaluated (Last-Modified, the page's footer).
func TestAnswersAreRenderedOncePerEvaluation(t *testing.T) {
	a, _ := demoAgent(t)
	st := a.Store
	calls := 0
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f := countingFindings{ev: &collectors.Evaluation{At: at, Findings: a.Findings.Typed()}, calls: &calls}
	if len(f.ev.Findings) == 0 {
		t.Fatal("control: the demo has no finding")
	}
	h := ui.New(st, f, ready{}, ui.Options{}).Handler()
	get := func(p string) (string, http.Header) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, w.Code)
		}
		return w.Body.String(), w.Header()
	}
	for _, p := range []string{"/", "/api/v1/findings", "/?namespace=app"} {
		first, hdr := get(p)
		if hdr.Get("Last-Modified") != at.Format(http.TimeFormat) {
			t.Errorf("GET %s: Last-Modified %q, want the evaluation's time", p, hdr.Get("Last-Modified"))
		}
		if again, _ := get(p); again != first {
			t.Errorf("GET %s twice on one evaluation: the answers differ", p)
		}
		if p == "/" && !strings.Contains(first, "generated "+at.Format(time.RFC3339)) {
			t.Errorf("the page does not say when its findings were evaluated")
		}
	}
	page, _ := get("/")
	f.ev = &collectors.Evaluation{At: at.Add(time.Minute)}
	h = ui.New(st, f, ready{}, ui.Options{}).Handler()
	if next, _ := get("/"); next == page {
		t.Fatal("a new evaluation served the previous evaluation's page")
	}
}

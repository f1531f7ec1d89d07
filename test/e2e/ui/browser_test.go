// Package ui tests the findings page in a real browser: Debian's Chromium,
// headless, driven over the DevTools protocol (chromedp), on the page of
// `agent --demo`. Every failure class of the demo appears with its objects,
// the delivery-path SVG shows the missing key, the page works with JavaScript
// off, the namespace filter works, no request leaves the origin and the
// console logs no error (a Content-Security-Policy violation would be one).
// A screenshot is saved as a test artifact (DRIFTWATCH_E2E_LOGS, else the
// temp dir); DRIFTWATCH_UPDATE_SCREENSHOT=1 also writes docs/img/findings-page.png
// and docs/img/finding-card.png.
package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// startDemo builds the agent and runs it with --demo on a free port until the
// test ends; it returns the base URL once /readyz answers.
func startDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := tools.BuildAgent(filepath.Join(dir, "driftwatch"))
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--demo", "--listen", strings.TrimPrefix(base, "http://"), "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("the demo agent did not become ready:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type apiFinding struct {
	Class  string `json:"class"`
	Metric string `json:"metric"`
	Object struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"object"`
}

func (f apiFinding) dataObject() string {
	return f.Object.Kind + "/" + f.Object.Namespace + "/" + f.Object.Name
}

// findings waits until the demo's API lists a finding of every failure class
// of the catalog (the flips and stale pods come from the demo's activities, a
// few seconds after start) and returns them.
func findings(t *testing.T, base string) []apiFinding {
	t.Helper()
	want := map[string]bool{}
	for _, f := range finding.Catalog() {
		if f.Kind == finding.KindFinding {
			want[f.Class] = true
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/findings")
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Findings []apiFinding }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		have := map[string]bool{}
		for _, f := range r.Findings {
			have[f.Class] = true
		}
		for c := range want {
			if !have[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) == 0 {
			return r.Findings
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo never showed a finding of the classes %q", missing)
		}
		time.Sleep(time.Second)
	}
}

// browser starts headless Chromium with the flags that work on this
// project's machines, recording every request and every console error.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	errors   []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if os.Getenv("DRIFTWATCH_E2E") == "0" {
		t.Skip("DRIFTWATCH_E2E=0")
	}
	chromium, err := tools.Tool("chromium")
	if err != nil {
		t.Fatal(err)
	}
	// The profile folder: removed after the browser is gone (its helper
	// processes may still write for a moment after the allocator stops).
	profile, err := os.MkdirTemp("", "driftwatch-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
		for i := 0; i < 50; i++ {
			if err = os.RemoveAll(profile); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("removing the browser profile: %v", err)
	})
	b := &browser{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				b.errors = append(b.errors, "console."+string(e.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errors = append(b.errors, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError || e.Entry.Level == log.LevelWarning {
				b.errors = append(b.errors, "log "+string(e.Entry.Source)+": "+e.Entry.Text)
			}
		}
	})
	if err := chromedp.Run(ctx, network.Enable(), log.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return b
}

func (b *browser) seen() (requests, errors []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests), slices.Clone(b.errors)
}

func artifactDir(t *testing.T) string {
	if d := os.Getenv("DRIFTWATCH_E2E_LOGS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return os.TempDir()
}

func TestFindingsPageInChromium(t *testing.T) {
	b := newBrowser(t)
	base := startDemo(t)
	want := findings(t, base)

	// With JavaScript off: the page is complete without it.
	var cards []*cdp.Node
	var classes []string
	if err := chromedp.Run(b.ctx,
		emulation.SetScriptExecutionDisabled(true),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#summary", chromedp.ByID),
		chromedp.Nodes("article.card", &cards, chromedp.ByQueryAll),
	); err != nil {
		t.Fatal(err)
	}
	var h2 []*cdp.Node
	if err := chromedp.Run(b.ctx, chromedp.Nodes("section.class > h2", &h2, chromedp.ByQueryAll)); err != nil {
		t.Fatal(err)
	}
	for _, n := range h2 {
		var txt string
		if err := chromedp.Run(b.ctx, chromedp.Text([]cdp.NodeID{n.NodeID}, &txt, chromedp.ByNodeID)); err != nil {
			t.Fatal(err)
		}
		classes = append(classes, txt)
	}
	shown := map[string]bool{}
	for _, n := range cards {
		shown[n.AttributeValue("data-metric")+" "+n.AttributeValue("data-object")] = true
	}
	wantClasses := map[string]bool{}
	for _, f := range want {
		wantClasses[f.Class] = true
		if !shown[f.Metric+" "+f.dataObject()] {
			t.Errorf("no card for %s %s", f.Metric, f.dataObject())
		}
	}
	for c := range wantClasses {
		if !slices.ContainsFunc(classes, func(h string) bool { return strings.HasPrefix(h, c+" (") }) {
			t.Errorf("class %q has no section; sections: %q", c, classes)
		}
	}
	t.Logf("with JavaScript off: %d cards, %d classes: %q", len(cards), len(classes), classes)

	// The picture of the Ready-but-short Secret shows the missing key, as
	// rendered text of the SVG in the browser.
	var svgText string
	if err := chromedp.Run(b.ctx, chromedp.TextContent(`svg[aria-label^="Delivery path of Secret shop/payments-api"]`, &svgText, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"missing: STRIPE_KEY", "ExternalSecret", "checkout"} {
		if !strings.Contains(svgText, w) {
			t.Errorf("the payments-api SVG does not show %q: %q", w, svgText)
		}
	}

	// The namespace filter: a plain GET form.
	var loc string
	var filtered []*cdp.Node
	if err := chromedp.Run(b.ctx,
		emulation.SetScriptExecutionDisabled(false),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#ns", chromedp.ByID),
		chromedp.SetValue("#ns", "gitops", chromedp.ByID),
		chromedp.Click(`header button[type="submit"]`, chromedp.ByQuery),
		// The new page marks the chosen namespace selected (an attribute
		// only the server writes).
		chromedp.WaitReady(`#ns option[value="gitops"][selected]`, chromedp.ByQuery),
		chromedp.Location(&loc),
		chromedp.Nodes("article.card", &filtered, chromedp.ByQueryAll),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(loc, "/?namespace=gitops") || len(filtered) == 0 || len(filtered) >= len(cards) {
		t.Errorf("filter: at %s, %d of %d cards", loc, len(filtered), len(cards))
	}
	for _, n := range filtered {
		if o := n.AttributeValue("data-object"); !strings.Contains(o, "/gitops/") {
			t.Errorf("namespace=gitops shows %s", o)
		}
	}

	// A Secret's own page.
	var inv string
	if err := chromedp.Run(b.ctx, chromedp.Navigate(base+"/secret/healthy/web-config"),
		chromedp.Text("main", &inv, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inv, "Read by") || !strings.Contains(inv, "Deployment web") {
		t.Errorf("inventory page: %q", inv)
	}

	// Screenshots: the whole page as an artifact; the top of the page for the docs.
	var full, top, card []byte
	if err := chromedp.Run(b.ctx, chromedp.Navigate(base+"/?namespace=shop"), chromedp.WaitVisible("#summary", chromedp.ByID),
		chromedp.FullScreenshot(&full, 100), chromedp.CaptureScreenshot(&top),
		chromedp.Screenshot(`article[data-metric="driftwatch_secret_missing_key"][data-object="Secret/shop/payments-api"]`, &card, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(artifactDir(t), "driftwatch-findings-page.png")
	if err := os.WriteFile(p, full, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (whole page, %d bytes): %s", len(full), p)
	if os.Getenv("DRIFTWATCH_UPDATE_SCREENSHOT") == "1" {
		root, _ := tools.RepoRoot()
		if err := os.WriteFile(filepath.Join(root, "docs", "img", "findings-page.png"), top, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "docs", "img", "finding-card.png"), card, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	requests, errs := b.seen()
	if len(requests) == 0 {
		t.Fatal("recorded no request: the network listener is not working")
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("a request left the origin: %s", u)
		}
	}
	for _, e := range errs {
		t.Errorf("browser console: %s", e)
	}
	t.Logf("%d requests, all to %s", len(requests), base)
}

// The recorder itself: a page that breaks the policy is reported, so the
// checks above can fail.
func TestRecorderSeesViolations(t *testing.T) {
	b := newBrowser(t)
	// The image would go to another loopback address; the policy blocks it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		_, _ = io.WriteString(w, `<!DOCTYPE html><html><head><style>body{color:red}</style></head><body><img src="http://127.0.0.2:9/x.png"></body></html>`)
	}))
	defer srv.Close()
	if err := chromedp.Run(b.ctx, chromedp.Navigate(srv.URL+"/"), chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, errs := b.seen()
	if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "Content Security Policy") }) {
		t.Errorf("a CSP violation went unseen; console: %q", errs)
	}
}

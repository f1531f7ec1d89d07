package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestAheadSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	type scrape struct {
		host string
		at   float64
	}
	for _, tc := range []struct {
		name     string
		scrapes  []scrape
		now      float64
		lastRun  float64 // 0: never
		lead     time.Duration
		want     float64
		wantNone bool
	}{
		{name: "one scrape: no interval yet", scrapes: []scrape{{"a", 0}}, now: 1, lead: time.Second, wantNone: true},
		{name: "every 30 s: a lead before the next", scrapes: []scrape{{"a", 0}, {"a", 30}}, now: 31, lead: time.Second, want: 59},
		{name: "already prepared for it", scrapes: []scrape{{"a", 0}, {"a", 30}}, now: 59.5, lastRun: 59, lead: time.Second, wantNone: true},
		{name: "back to back: no help", scrapes: []scrape{{"a", 0}, {"a", 0.05}, {"a", 0.1}}, now: 0.11, lead: time.Second, wantNone: true},
		{name: "late: the scrape does it", scrapes: []scrape{{"a", 0}, {"a", 30}}, now: 61, lead: time.Second, wantNone: true},
		{name: "gone for three intervals: forgotten", scrapes: []scrape{{"a", 0}, {"a", 30}}, now: 125, lead: time.Second, wantNone: true},
		{name: "a long lead starts at half the interval", scrapes: []scrape{{"a", 0}, {"a", 10}}, now: 11, lead: 8 * time.Second, want: 15},
		{name: "two replicas: the earlier", scrapes: []scrape{{"a", 0}, {"b", 0.4}, {"a", 30}, {"b", 30.4}}, now: 31, lead: time.Second, want: 59},
		{name: "two replicas, one prepare serves both", scrapes: []scrape{{"a", 0}, {"b", 0.4}, {"a", 30}, {"b", 30.4}},
			now: 59.2, lastRun: 59, lead: time.Second, wantNone: true},
		{name: "a fast and a slow scraper: the slow one", scrapes: []scrape{{"a", 0}, {"b", 0}, {"a", 1}, {"a", 2}, {"b", 20}},
			now: 2.5, lead: time.Second, want: 39},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newAheadScheduler()
			for _, sc := range tc.scrapes {
				s.seen(sc.host+":4711", at(sc.at))
			}
			var lastRun time.Time
			if tc.lastRun != 0 {
				lastRun = at(tc.lastRun)
			}
			got, _, ok := s.next(at(tc.now), lastRun, tc.lead)
			if tc.wantNone {
				if ok {
					t.Fatalf("prepare at %v, want none", got.Sub(t0).Seconds())
				}
				return
			}
			if !ok || !got.Equal(at(tc.want)) {
				t.Fatalf("prepare at %v (ok %v), want %v", got.Sub(t0).Seconds(), ok, tc.want)
			}
		})
	}
}

func TestAheadRemembersBoundedScrapers(t *testing.T) {
	s := newAheadScheduler()
	t0 := time.Unix(1000, 0)
	for i := range aheadMaxScrapers + 3 {
		s.seen("10.0.0."+strconv.Itoa(i)+":9", t0.Add(time.Duration(i)*time.Second))
	}
	if len(s.scrapers) != aheadMaxScrapers {
		t.Fatalf("%d scrapers remembered, want %d", len(s.scrapers), aheadMaxScrapers)
	}
	if _, ok := s.scrapers["10.0.0.0"]; ok {
		t.Fatal("the scraper seen longest ago was kept")
	}
	if _, ok := s.scrapers["10.0.0.10"]; !ok {
		t.Fatal("the newest scraper was not remembered")
	}
}

// logRecords collects the messages a logger receives.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// aheadEvaluations returns the namespace_evaluations of the "evaluated ahead"
// records so far.
func (l *logRecords) aheadEvaluations() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, r := range l.recs {
		if r.Message != "evaluated ahead of the next scrape" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "namespace_evaluations" {
				out = append(out, a.Value.Int64())
			}
			return true
		})
	}
	return out
}

var nsEvalLine = regexp.MustCompile(`(?m)^driftwatch_detector_namespace_evaluations_total\{[^}]*\} (\S+)$`)

// namespaceEvaluations sums driftwatch_detector_namespace_evaluations_total.
func namespaceEvaluations(t *testing.T, text string) int64 {
	t.Helper()
	var n int64
	for _, m := range nsEvalLine.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		n += int64(v)
	}
	return n
}

// A scraper that comes every 2 s: after a Secret lost a key, the agent
// evaluates its namespace before the next scrape is due, and that scrape
// exports the finding without evaluating any namespace itself.
func TestEvaluatesAheadOfTheNextScrape(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", UID: "s1"},
			Data: map[string][]byte{"user": []byte("u"), "password": []byte("p")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", UID: "p1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "PW",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "x", UID: "s2"}, Data: map[string][]byte{"k": []byte("v")}},
	)
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "secrets", Namespaced: true, Kind: "Secret"}, {Name: "pods", Namespaced: true, Kind: "Pod"}}}}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	logs := &logRecords{}
	log := slog.New(logs)
	a := New(Clients{Core: cs, Dynamic: dyn, Discovery: cs.Discovery()},
		Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoveryInterval: time.Hour, EvaluateAhead: true})
	a.ahead.minGap, a.ahead.minLead = time.Second, 200*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Manager.Run(ctx) }()
	go func() { defer wg.Done(); a.runAhead(ctx, log) }()
	defer func() { cancel(); wg.Wait() }()
	for deadline := time.Now().Add(time.Minute); !a.Manager.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fake cluster did not sync")
		}
	}
	h := a.Handler()
	scrape := func() string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = "10.1.2.3:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", w.Code)
		}
		return w.Body.String()
	}
	const finding = `driftwatch_secret_missing_key{key="password",namespace="app"`
	scrape()
	time.Sleep(2 * time.Second)
	before := scrape() // the scraper's interval is now 2 s
	if strings.Contains(before, finding) {
		t.Fatal("a finding before the key was removed")
	}
	if got := logs.aheadEvaluations(); len(got) != 0 {
		t.Fatalf("evaluated ahead %v before a second interval was due", got)
	}
	upd := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", UID: "s1"}, Data: map[string][]byte{"user": []byte("u")}}
	if _, err := cs.CoreV1().Secrets("app").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		has := true
		a.Store.Read(func(v model.View) {
			if s, ok := v.Secret("app", "db"); ok {
				has = s.Keys.Has("password")
			}
		})
		if !has {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("the informer took over 1 s to deliver the update: the evaluation ahead may have run before it")
		}
	}
	var ahead []int64
	for deadline := time.Now().Add(30 * time.Second); len(ahead) == 0; time.Sleep(20 * time.Millisecond) {
		if ahead = logs.aheadEvaluations(); len(ahead) == 0 && time.Now().After(deadline) {
			t.Fatal("no evaluation ahead of the next scrape")
		}
	}
	if ahead[0] < 1 {
		t.Fatalf("the evaluation ahead evaluated %d namespaces, want the changed one", ahead[0])
	}
	after := scrape()
	if !strings.Contains(after, finding) {
		t.Fatalf("the scrape after the evaluation ahead lacks the finding:\n%s", after)
	}
	if m := regexp.MustCompile(`(?m)^driftwatch_evaluations_total\{trigger="ahead"\} (\d+)$`).FindStringSubmatch(after); m == nil || m[1] == "0" {
		t.Fatalf("no driftwatch_evaluations_total{trigger=\"ahead\"} above 0:\n%s", after)
	}
	if b, n := namespaceEvaluations(t, before), namespaceEvaluations(t, after); n != b+ahead[0] {
		t.Fatalf("namespace evaluations %d → %d with %d ahead: the scrape evaluated %d itself, want 0", b, n, ahead[0], n-b-ahead[0])
	}
}

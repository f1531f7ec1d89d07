package collectors

import (
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// latestFixture is a model with one finding (a pod reading a key its Secret
// lacks) and a collector whose clock the test moves; runs counts the
// evaluations (the flips detector starting: it runs on the whole model at
// every evaluation, where missing_keys reuses unchanged namespaces).
func latestFixture(t *testing.T) (c *Findings, now *time.Time, runs *atomic.Int64, health mt.Health) {
	t.Helper()
	s := model.NewStore(nil)
	s.UpsertSecret(mt.Secret("app", "db", "user"), time.Unix(1000, 0))
	s.UpsertPod(mt.Pod("app", "web", mt.OptEnv("db", "password")))
	clock := time.Unix(100000, 0)
	runs = &atomic.Int64{}
	health = mt.HealthAll()
	c = NewFindings(s, health, Config{Now: func() time.Time { return clock },
		BeforeDetector: func(d string) {
			if d == "flips" { // cluster-wide: runs at every evaluation
				runs.Add(1)
			}
		}})
	return c, &clock, runs, health
}

// The page and the API read the last scrape's findings while they are recent
// enough: no detector runs for them, and they are the findings Run returns.
// Older than maxAge, or made while another set of resources was available,
// they are evaluated again.
func TestLatestReusesTheLastScrape(t *testing.T) {
	c, now, runs, health := latestFixture(t)
	if err := c.WriteText(io.Discard); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the scrape evaluated %d times, want 1", runs.Load())
	}
	*now = now.Add(5 * time.Second)
	ev := c.Latest(10 * time.Second)
	if runs.Load() != 1 {
		t.Fatalf("Latest evaluated although the last scrape is 5 s old (runs %d)", runs.Load())
	}
	want := c.Run().Findings
	if len(want) == 0 || len(ev.Findings) != len(want) || ev.Findings[0].Metric != want[0].Metric {
		t.Fatalf("Latest's findings differ from Run's:\n got %v\nwant %v", ev.Findings, want)
	}
	if ev.At != now.Add(-5*time.Second) {
		t.Fatalf("evaluation time %v, want the scrape's", ev.At)
	}
	runs.Store(0)
	*now = now.Add(11 * time.Second) // Run's evaluation is now 11 s old
	if ev := c.Latest(10 * time.Second); runs.Load() != 1 || ev.At != *now {
		t.Fatalf("an evaluation 11 s old was reused (runs %d, at %v)", runs.Load(), ev.At)
	}
	delete(health, model.ResSecrets) // Secrets no longer available: missing_keys does not run
	if ev := c.Latest(10 * time.Second); len(ev.Findings) != 0 {
		t.Fatalf("an evaluation made with Secrets available was reused after they went: %v", ev.Findings)
	}
	// driftwatch_evaluations_total says who asked: one scrape before this
	// one, and three readers (Run, then Latest twice) that evaluated.
	var text strings.Builder
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`driftwatch_evaluations_total{trigger="scrape"} 2`, `driftwatch_evaluations_total{trigger="request"} 3`} {
		if !strings.Contains(text.String(), want+"\n") {
			t.Errorf("no %s in:\n%s", want, grepLines(text.String(), "evaluations_total"))
		}
	}
}

// However many readers find the last evaluation too old at once, the
// detectors run once for all of them.
func TestLatestEvaluatesOnceForConcurrentReaders(t *testing.T) {
	c, _, runs, _ := latestFixture(t)
	var wg sync.WaitGroup
	evs := make(chan *Evaluation, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs <- c.Latest(time.Minute)
		}()
	}
	wg.Wait()
	close(evs)
	if runs.Load() != 1 {
		t.Fatalf("50 concurrent readers ran the detectors %d times, want 1", runs.Load())
	}
	var first *Evaluation
	for ev := range evs {
		if first == nil {
			first = ev
		}
		if ev != first || len(ev.Findings) == 0 {
			t.Fatalf("readers got different or empty evaluations")
		}
	}
}

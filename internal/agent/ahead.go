package agent

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Evaluating ahead of the scrape (--evaluate-ahead).
//
// A scrape evaluates the per-namespace detectors over every namespace written
// to since the previous evaluation. Prometheus scrapes every 15-30 s, so under
// any steady churn that is every namespace: a full evaluation (50 ms at 20k
// Secrets, 0.3-1.3 s at 100k) while the scraper waits, holding the model's read
// lock. The agent learns when each scraper comes (the gap between its last two
// scrapes) and runs Findings.Prepare in passes shortly before the next one is
// due (runAhead), so that the scrape has left only the cluster-wide detectors
// and what changed during the last pass. The passes cost CPU under heavy churn
// (docs/performance.md, "Evaluating ahead of the scrape"): off by default.

const (
	// aheadMinGap: scrapers that come more often than this are not helped
	// (the scrape would find the same work left; back-to-back scrapes).
	aheadMinGap = 5 * time.Second
	// aheadMinLead: Prepare runs at least this long before the expected
	// scrape (and three times the last first pass's time).
	aheadMinLead = time.Second
	// aheadMaxScrapers bounds the scrapers remembered (by remote host).
	aheadMaxScrapers = 8
	// aheadMargin: no further pass starts unless twice the last pass's time
	// and this remain before the scrape is due.
	aheadMargin = 20 * time.Millisecond
	// aheadIdle: the wait before another pass when the last one found
	// nothing that moved.
	aheadIdle = 25 * time.Millisecond
)

// scraperSeen is one scraper's last two scrape starts.
type scraperSeen struct{ prev, last time.Time }

// aheadScheduler remembers when the scrapers came and says when to prepare.
type aheadScheduler struct {
	mu       sync.Mutex
	scrapers map[string]*scraperSeen
	kick     chan struct{}
	// minGap and minLead: aheadMinGap and aheadMinLead (tests shorten them).
	minGap, minLead time.Duration
}

func newAheadScheduler() *aheadScheduler {
	return &aheadScheduler{scrapers: map[string]*scraperSeen{}, kick: make(chan struct{}, 1), minGap: aheadMinGap, minLead: aheadMinLead}
}

// seen records a scrape from remoteAddr (host:port) starting at at.
func (s *aheadScheduler) seen(remoteAddr string, at time.Time) {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	s.mu.Lock()
	sc := s.scrapers[host]
	if sc == nil {
		if len(s.scrapers) >= aheadMaxScrapers {
			oldest := ""
			for h, o := range s.scrapers {
				if oldest == "" || o.last.Before(s.scrapers[oldest].last) {
					oldest = h
				}
			}
			delete(s.scrapers, oldest)
		}
		sc = &scraperSeen{}
		s.scrapers[host] = sc
	}
	sc.prev, sc.last = sc.last, at
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// next says when to run Prepare: before the earliest scrape expected after
// now, lead ahead of it but not in the first half of its interval, for the
// scrapers that come at a steady interval of at least minGap and for
// which no Prepare ran since their last scrape (lastRun). ok is false when no
// scraper qualifies. Scrapers not seen for three of their intervals are
// forgotten.
func (s *aheadScheduler) next(now, lastRun time.Time, lead time.Duration) (at, expected time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, sc := range s.scrapers {
		if sc.prev.IsZero() {
			continue
		}
		gap := sc.last.Sub(sc.prev)
		if now.Sub(sc.last) > 3*gap {
			delete(s.scrapers, h)
			continue
		}
		if gap < s.minGap || lastRun.After(sc.last) {
			continue
		}
		due := sc.last.Add(gap)
		if !due.After(now) {
			continue // late: it does the work itself
		}
		t := due.Add(-lead)
		if half := sc.last.Add(gap / 2); t.Before(half) {
			t = half
		}
		if !ok || t.Before(at) {
			at, expected, ok = t, due, true
		}
	}
	return at, expected, ok
}

// runAhead runs Prepare when next says, until ctx ends. The first pass
// evaluates what moved since the last scrape, which under steady churn takes
// long enough for many namespaces to move again (at 200 updates/s spread over
// 200 namespaces, most of them within a second). So passes follow until the
// scrape is due, each over what moved since the one before (after a short
// wait when nothing did): the scrape is left with what moved during the last
// pass. The passes stay inside the lead (three times the first pass's time,
// at least 1 s), so what they cost beyond the first is bounded by it: at most
// the lead's time per scrape under churn over every namespace (measured: +38 %
// of the agent's CPU at 200 updates/s over 200 namespaces and a scrape every
// 15 s, for scrapes 3x shorter), and a walk over the namespaces every 25 ms of
// it when nothing moves. That trade is why it is off by default.
func (a *Agent) runAhead(ctx context.Context, log *slog.Logger) {
	s := a.ahead
	var lastRun time.Time
	var lastTook time.Duration // the first pass's, last time
	for {
		lead := max(s.minLead, 3*lastTook)
		at, expected, ok := s.next(time.Now(), lastRun, lead)
		var fire <-chan time.Time
		var t *time.Timer
		if ok {
			t = time.NewTimer(time.Until(at))
			fire = t.C
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return
		case <-s.kick:
			if t != nil {
				t.Stop()
			}
			continue
		case <-fire:
		}
		start := time.Now()
		n := a.Findings.Prepare()
		took := time.Since(start)
		lastRun, lastTook = start, took
		passes, total := 1, n
		// Then pass after pass, each over what moved since the one before,
		// until the last that can end before the scrape is due.
		for ctx.Err() == nil && time.Until(expected) > 2*took+aheadMargin+aheadIdle {
			if n == 0 {
				time.Sleep(aheadIdle) // nothing moved during the last pass
			}
			t0 := time.Now()
			n = a.Findings.Prepare()
			took = time.Since(t0)
			total += n
			passes++
		}
		log.Debug("evaluated ahead of the next scrape", "namespace_evaluations", total, "passes", passes,
			"took", time.Since(start), "until_due", time.Until(expected))
	}
}

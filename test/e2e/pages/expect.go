package pages

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// ExpectSeries waits up to wait until a scrape of the agent has (present) or
// lacks (!present) a series named name carrying labels, and returns the
// matching series of the last scrape. A miss is an error, not fatal (ok false):
// a corpus run goes on and reports the rest.
func ExpectSeries(t testing.TB, a *cluster.Agent, wait time.Duration, present bool, name string, labels map[string]string) (got []scrape.Series, ok bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	var last []scrape.Series
	for {
		all, err := a.Scrape()
		if err == nil {
			last = all
			if got := scrape.Find(all, name, labels); (len(got) > 0) == present {
				return got, true
			}
		}
		if time.Now().After(deadline) {
			var have []string
			for _, s := range scrape.Find(last, name, nil) {
				have = append(have, s.String())
			}
			verb := "no series"
			if !present {
				verb = "still a series"
			}
			t.Errorf("after %s, %s %s%v; the last scrape's %s series:\n  %s", wait, verb, name, labels, name, strings.Join(have, "\n  "))
			return nil, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ExpectHook waits up to wait for a notification received at index from or
// later with an alert that matches; a miss is an error, not fatal.
func ExpectHook(t testing.TB, ps *promstack.Stack, hook *promstack.Webhook, from int, wait time.Duration, what string, match func(promstack.Alert) bool) (promstack.Alert, bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if _, a, ok := hook.Find(from, func(_ promstack.Message, a promstack.Alert) bool { return match(a) }); ok {
			return a, true
		}
		ps.Alive(t)
		if time.Now().After(deadline) {
			alerts, _ := ps.Query(`ALERTS`)
			t.Errorf("%s did not reach the webhook within %s; notifications so far:\n%s\nPrometheus ALERTS: %v", what, wait, hook.Dump(), alerts)
			return promstack.Alert{}, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

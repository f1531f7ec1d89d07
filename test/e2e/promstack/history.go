package promstack

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/alerts"
)

// selfGroup is the shipped rules' group of the agent's own alerts.
const selfGroup = "driftwatch.agent"

type shippedRule struct {
	Alert string `json:"alert"`
	Expr  string `json:"expr"`
}

// shippedRules returns the shipped rules' alerts by group.
func shippedRules() (map[string][]shippedRule, error) {
	var rf struct {
		Groups []struct {
			Name  string        `json:"name"`
			Rules []shippedRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(alerts.Rules, &rf); err != nil {
		return nil, fmt.Errorf("alerts/driftwatch.rules.yaml: %w", err)
	}
	out := map[string][]shippedRule{}
	for _, g := range rf.Groups {
		out[g.Name] = append(out[g.Name], g.Rules...)
	}
	return out, nil
}

// SelfAlert reports whether alertname is one of the agent's own alerts (the
// shipped group driftwatch.agent: DriftwatchDown, DriftwatchCrashLooping,
// DriftwatchNotEvaluating and the warnings on its informers and detectors).
func SelfAlert(alertname string) bool {
	groups, err := shippedRules()
	if err != nil {
		return false
	}
	for _, r := range groups[selfGroup] {
		if r.Alert == alertname {
			return true
		}
	}
	return false
}

// LogScrapeHistory logs ScrapeHistory for job from from until now when one
// of alertnames is an agent alert (SelfAlert): why Prometheus judged the
// agent down, crash-looping or not evaluating. A stray-page check calls it
// with the stray pages' names.
func (s *Stack) LogScrapeHistory(t testing.TB, job string, from time.Time, alertnames ...string) {
	t.Helper()
	var self []string
	for _, n := range alertnames {
		if SelfAlert(n) {
			self = append(self, n)
		}
	}
	if len(self) == 0 || s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := s.ScrapeHistory(ctx, job, from, time.Now())
	if err != nil {
		t.Logf("scrape history for %v: %v", self, err)
		return
	}
	t.Logf("agent alert(s) %v: what Prometheus recorded of job %q (DriftwatchDown's for here: %s; scrape_interval and scrape_timeout 1s):\n%s",
		self, job, DownFor, h)
}

// rangeSeries is one series of a range query.
type rangeSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// QueryRange runs a range query and returns its series.
func (s *Stack) queryRange(ctx context.Context, q string, from, to time.Time, step time.Duration) ([]rangeSeries, error) {
	v := url.Values{}
	v.Set("query", q)
	v.Set("start", strconv.FormatFloat(float64(from.UnixMilli())/1000, 'f', 3, 64))
	v.Set("end", strconv.FormatFloat(float64(to.UnixMilli())/1000, 'f', 3, 64))
	v.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.PromURL+"/api/v1/query_range?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string        `json:"resultType"`
			Result     []rangeSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d: %w", q, resp.StatusCode, err)
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: HTTP %d: %s: %s", q, resp.StatusCode, out.ErrorType, out.Error)
	}
	return out.Data.Result, nil
}

// historyRow is what Prometheus had at one step for one target (instance ""
// is the job as a whole: DriftwatchDown's absent_over_time branch and the
// job-wide alerts).
type historyRow struct {
	up     string  // "0", "1" or "-" (no sample)
	dur    float64 // scrape_duration_seconds, NaN if none
	avg    float64 // avg_over_time(up[10m]), NaN if none
	down   bool    // DriftwatchDown's expression returned this target (or the job)
	alerts string  // agent alerts pending or firing, "name=state ..."
}

func (r historyRow) same(o historyRow) bool {
	return r.up == o.up && r.down == o.down && r.alerts == o.alerts
}

// ScrapeHistory returns, one row per run of seconds from from to to (clamped
// to Prometheus's start) in which nothing but numbers changed, what this
// Prometheus recorded of job's targets: up, scrape_duration_seconds,
// avg_over_time(up[10m]), whether DriftwatchDown's shipped expression
// selected the target (or, without instance, the job through its
// absent_over_time branch), and which agent alerts (SelfAlert) were pending
// or firing; then the scrapes its log reports failed. Times are seconds
// after from. Metrics only: no Secret value is ever in them.
func (s *Stack) ScrapeHistory(ctx context.Context, job string, from, to time.Time) (string, error) {
	if !s.started.IsZero() && from.Before(s.started) {
		from = s.started
	}
	const step = time.Second
	if n := to.Sub(from) / step; n > 10000 { // query_range's limit is 11,000 points
		from = to.Add(-10000 * step)
	}
	if !to.After(from) {
		return "", fmt.Errorf("empty range %s..%s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	groups, err := shippedRules()
	if err != nil {
		return "", err
	}
	var downExpr string
	var self []string
	for _, r := range groups[selfGroup] {
		self = append(self, r.Alert)
		if r.Alert == downAlert {
			downExpr = r.Expr
		}
	}
	if downExpr == "" {
		return "", fmt.Errorf("no %s in group %s of alerts/driftwatch.rules.yaml", downAlert, selfGroup)
	}
	sel := fmt.Sprintf("job=%q", job)
	downExpr = strings.ReplaceAll(downExpr, `job="driftwatch"`, sel)

	rows := map[string]map[int64]*historyRow{} // instance -> unix second -> row
	row := func(inst string, ts int64) *historyRow {
		if rows[inst] == nil {
			rows[inst] = map[int64]*historyRow{}
		}
		r := rows[inst][ts]
		if r == nil {
			r = &historyRow{up: "-", dur: math.NaN(), avg: math.NaN()}
			rows[inst][ts] = r
		}
		return r
	}
	each := func(q string, fn func(m map[string]string, r *historyRow, v string)) error {
		res, err := s.queryRange(ctx, q, from, to, step)
		if err != nil {
			return err
		}
		for _, sr := range res {
			for _, p := range sr.Values {
				ts, ok := p[0].(float64)
				v, ok2 := p[1].(string)
				if !ok || !ok2 {
					return fmt.Errorf("%s: undecodable point %v", q, p)
				}
				fn(sr.Metric, row(sr.Metric["instance"], int64(math.Round(ts))), v)
			}
		}
		return nil
	}
	num := func(v string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	for _, q := range []struct {
		q  string
		fn func(m map[string]string, r *historyRow, v string)
	}{
		{fmt.Sprintf("up{%s}", sel), func(_ map[string]string, r *historyRow, v string) { r.up = v }},
		{fmt.Sprintf("scrape_duration_seconds{%s}", sel), func(_ map[string]string, r *historyRow, v string) { r.dur = num(v) }},
		{fmt.Sprintf("avg_over_time(up{%s}[10m])", sel), func(_ map[string]string, r *historyRow, v string) { r.avg = num(v) }},
		{downExpr, func(_ map[string]string, r *historyRow, _ string) { r.down = true }},
		{fmt.Sprintf("ALERTS{%s,alertname=~%q}", sel, strings.Join(self, "|")), func(m map[string]string, r *historyRow, _ string) {
			a := m["alertname"] + "=" + m["alertstate"]
			if r.alerts != "" {
				a = r.alerts + " " + a
			}
			r.alerts = a
		}},
	} {
		if err := each(q.q, q.fn); err != nil {
			return "", err
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "  from %s (+0s) to +%ds, step %s; DriftwatchDown's expression: %s\n",
		from.Format(time.RFC3339), int(to.Sub(from).Seconds()), step, strings.Join(strings.Fields(downExpr), " "))
	insts := make([]string, 0, len(rows))
	for inst := range rows {
		insts = append(insts, inst)
	}
	sort.Strings(insts)
	base := from.Unix()
	for _, inst := range insts {
		name := inst
		if name == "" {
			name = "(job " + job + ": no instance label)"
		}
		fmt.Fprintf(&b, "  %s:\n", name)
		tss := make([]int64, 0, len(rows[inst]))
		for ts := range rows[inst] {
			tss = append(tss, ts)
		}
		sort.Slice(tss, func(i, j int) bool { return tss[i] < tss[j] })
		for i := 0; i < len(tss); {
			first := rows[inst][tss[i]]
			j := i
			maxDur, failed := math.NaN(), 0
			for ; j < len(tss) && rows[inst][tss[j]].same(*first) && (j == i || tss[j] == tss[j-1]+1); j++ {
				r := rows[inst][tss[j]]
				if !math.IsNaN(r.dur) && (math.IsNaN(maxDur) || r.dur > maxDur) {
					maxDur = r.dur
				}
				if r.up == "0" {
					failed++
				}
			}
			last := rows[inst][tss[j-1]]
			fmt.Fprintf(&b, "    +%ds..+%ds (%d)", tss[i]-base, tss[j-1]-base, j-i)
			if inst != "" {
				fmt.Fprintf(&b, " up=%s", first.up)
				if !math.IsNaN(maxDur) {
					fmt.Fprintf(&b, " scrape_duration max %.3fs", maxDur)
				}
				if !math.IsNaN(first.avg) || !math.IsNaN(last.avg) {
					fmt.Fprintf(&b, " avg10m %.2f..%.2f", first.avg, last.avg)
				}
			}
			if first.down {
				b.WriteString(" DriftwatchDown-expr=yes")
			}
			if first.alerts != "" {
				b.WriteString(" ALERTS: " + first.alerts)
			}
			b.WriteString("\n")
			i = j
		}
	}
	if len(insts) == 0 {
		b.WriteString("  (no sample and no alert in the range)\n")
	}
	if s.prom != nil {
		b.WriteString(scrapeFailures(s.prom.LogPath, 10))
	}
	return b.String(), nil
}

// scrapeFailures lists the first n "Scrape failed" lines of Prometheus's log
// (it runs with --log.level=debug) and how many there are.
func scrapeFailures(logPath string, n int) string {
	f, err := os.Open(logPath)
	if err != nil {
		return fmt.Sprintf("  Prometheus log: %v\n", err)
	}
	defer f.Close()
	var lines []string
	total := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Scrape failed") {
			total++
			if len(lines) < n {
				lines = append(lines, "    "+sc.Text())
			}
		}
	}
	if total == 0 {
		return "  Prometheus log: no failed scrape\n"
	}
	return fmt.Sprintf("  Prometheus log: %d failed scrape(s), the first %d:\n%s\n", total, len(lines), strings.Join(lines, "\n"))
}

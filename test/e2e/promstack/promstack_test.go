package promstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

// TestShortenFor: the stack's rule copy has every `for` at ShortFor but
// DriftwatchDown's at DownFor, and everything else as shipped.
func TestShortenFor(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(ShortenFor(t, dir, "0s"))
	if err != nil {
		t.Fatal(err)
	}
	fors := forLine.FindAll(b, -1)
	alerts := alertLine.FindAll(b, -1)
	if len(fors) != len(alerts) {
		t.Fatalf("%d `for:` lines for %d alerts", len(fors), len(alerts))
	}
	down := 0
	for _, f := range fors {
		switch strings.TrimSpace(string(f)) {
		case "for: " + ShortFor:
		case "for: " + DownFor:
			down++
		default:
			t.Errorf("unexpected %q", f)
		}
	}
	if down != 1 {
		t.Errorf("%d `for: %s` lines, want 1 (DriftwatchDown's)", down, DownFor)
	}
	i := strings.Index(string(b), "- alert: "+downAlert+"\n")
	if i < 0 || !regexp.MustCompile(`^- alert: `+downAlert+`\n(?:[^\n]*\n)*?\s*for: `+DownFor+`\n`).MatchString(string(b[i:])) {
		t.Errorf("DriftwatchDown does not have for: %s", DownFor)
	}
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(root, "alerts", "driftwatch.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	strip := func(b []byte) string {
		return keepLine.ReplaceAllString(forLine.ReplaceAllString(string(b), "${1}for: X"), "${1}keep_firing_for: X")
	}
	if strip(b) != strip(shipped) {
		t.Error("the copy differs from the shipped rules in more than `for` and `keep_firing_for`")
	}
}

// TestDriftwatchDownAtStart runs promtool on the stack's rule copy, scraped
// and evaluated every second as the stack does, for a young target whose
// first k scrapes fail (then all succeed) and for a Prometheus whose first
// scrape of the target comes g seconds after its first evaluation. A young
// target's failed scrapes never page (the shipped rule judges the ratio of a
// series only once it is 7 minutes old: a rollout's new pod that starts
// slowly is not an outage); the absent branch pages on a 6 s gap with
// DriftwatchDown at ShortFor (5 s), a 31 s one with DownFor (30 s).
func TestDriftwatchDownAtStart(t *testing.T) {
	promtool, err := tools.Tool("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		downFor       string
		fails         []int // initial failed scrapes: none pages
		gapNot, gapDo int   // seconds without a scrape that do not / do page
	}{
		{downFor: ShortFor, fails: []int{3, 4, 16, 60}, gapNot: 5, gapDo: 6},
		{downFor: DownFor, fails: []int{4, 16, 60}, gapNot: 30, gapDo: 31},
	} {
		t.Run("for="+tc.downFor, func(t *testing.T) {
			dir := t.TempDir()
			rules := shortenFor(t, dir, "0s", tc.downFor)
			forS := mustSeconds(t, tc.downFor)
			const horizon = 90 // seconds of samples and evaluations
			// series: k samples of first ("0" failed, "_" none), then up.
			series := func(first string, k int) string {
				v := make([]string, horizon)
				for i := range v {
					v[i] = "1"
					if i < k {
						v[i] = first
					}
				}
				return strings.Join(v, " ")
			}
			job := `alertname="DriftwatchDown", alertstate="firing", job="driftwatch", severity="critical"`
			var b strings.Builder
			fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: 1s\ntests:\n", rules)
			// add: no firing DriftwatchDown at any evaluation (labels ""),
			// or none before `for` and one with labels at `for`.
			add := func(name, values, labels string) {
				fmt.Fprintf(&b, "  - name: %q\n    interval: 1s\n    input_series:\n", name)
				fmt.Fprintf(&b, "      - series: 'up{job=\"driftwatch\",instance=\"a:1\"}'\n        values: '%s'\n", values)
				b.WriteString("    promql_expr_test:\n")
				for s := 0; s < horizon; s++ {
					exp := ""
					if labels != "" && s == forS {
						exp = fmt.Sprintf("{labels: 'ALERTS{%s}', value: 1}", labels)
					}
					if labels == "" || s <= forS {
						fmt.Fprintf(&b, "      - {expr: 'ALERTS{alertname=\"%s\",alertstate=\"firing\"}', eval_time: %ds, exp_samples: [%s]}\n", downAlert, s, exp)
					}
				}
			}
			for _, k := range tc.fails {
				add(fmt.Sprintf("first %d scrapes fail", k), series("0", k), "")
			}
			add(fmt.Sprintf("first scrape after %d s", tc.gapNot), series("_", tc.gapNot), "")
			add(fmt.Sprintf("first scrape after %d s", tc.gapDo), series("_", tc.gapDo), job)
			p := filepath.Join(dir, "down_at_start.yaml")
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(promtool, "test", "rules", p).CombinedOutput()
			if err != nil {
				t.Errorf("DriftwatchDown with for %s: want a page for a %d s gap at %s, none for %d s nor for %v initial failed scrapes:\n%s",
					tc.downFor, tc.gapDo, tc.downFor, tc.gapNot, tc.fails, out)
			}
		})
	}
}

func mustSeconds(t *testing.T, d string) int {
	t.Helper()
	var s int
	if _, err := fmt.Sscanf(d, "%ds", &s); err != nil {
		t.Fatalf("duration %q: %v", d, err)
	}
	return s
}

package pages

import (
	"slices"
	"sort"
	"testing"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// TestPageGradeFollowsTheCriticalRules checks the classifier on hand-made
// scrapes, so a corpus test's "no page" cannot pass because the classifier
// sees nothing.
func TestPageGradeFollowsTheCriticalRules(t *testing.T) {
	s := func(name string, v float64, kv ...string) scrape.Series {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return scrape.Series{Name: name, Labels: l, Value: v}
	}
	for _, tc := range []struct {
		name   string
		series []scrape.Series
		want   []string
	}{
		{"missing keys from an ExternalSecret, nobody consumes: no page",
			[]scrape.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "externalsecret", "optional", "false")}, nil},
		{"missing keys, a running reader: page",
			[]scrape.Series{
				s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "externalsecret", "optional", "false"),
				s("driftwatch_secret_short_consumer_pods", 2, "namespace", "a", "secret", "s", "workload_kind", "Deployment", "workload", "w"),
			}, []string{"DriftwatchSecretMissingKeyConsumed a/s"}},
		{"missing keys a pod expects: page",
			[]scrape.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "pod", "optional", "false")},
			[]string{"DriftwatchSecretMissingKeyConsumed a/s"}},
		{"absent, expected by a pod: page",
			[]scrape.Series{s("driftwatch_secret_absent", 1, "namespace", "a", "secret", "s", "source", "pod")},
			[]string{"DriftwatchSecretAbsentConsumed a/s"}},
		{"absent, expected by Helm only, a consumer in another Secret: no page",
			[]scrape.Series{
				s("driftwatch_secret_absent", 1, "namespace", "a", "secret", "s", "source", "helm"),
				s("driftwatch_secret_missing_key_consumer_pods", 1, "namespace", "a", "secret", "other", "workload_kind", "Deployment", "workload", "w"),
			}, nil},
		{"ready but short: page",
			[]scrape.Series{s("driftwatch_externalsecret_ready_but_short", 1, "namespace", "a", "externalsecret", "e", "secret", "s", "reason", "r")},
			[]string{"DriftwatchExternalSecretReadyButShort a/e"}},
		{"flapping: page",
			[]scrape.Series{s("driftwatch_secret_flapping", 2, "namespace", "a", "secret", "s", "writers", "x,y")},
			[]string{"DriftwatchSecretFlapping a/s"}},
		{"last-applied truncated: truncated_patch pages, the other causes warn",
			[]scrape.Series{
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "ExternalSecret", "name", "e", "cause", "truncated_patch"),
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "Secret", "name", "s", "cause", "live_shorter"),
			},
			[]string{"DriftwatchLastAppliedTruncated ExternalSecret a/e"}},
		{"a missing key only optional references name: warns",
			[]scrape.Series{s("driftwatch_secret_missing_keys", 1, "namespace", "a", "secret", "s", "source", "pod", "optional", "true")}, nil},
		{"ignore-list trap that rebuilds the list: page; the other effects: warning",
			[]scrape.Series{
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "x", "respect_ignore_differences", "true", "effect", "rebuilds_list"),
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "y", "respect_ignore_differences", "true", "effect", "rebuilds_list_if_present"),
				s("driftwatch_argocd_ignore_list_trap", 1, "namespace", "a", "application", "z", "respect_ignore_differences", "false", "effect", "hides_new_entries"),
			}, []string{"DriftwatchArgoCDIgnoreListTrap a/x"}},
		{"synced entries missing: page for an ExternalSecret unless truncated_patch pages for it; a Secret warns",
			[]scrape.Series{
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "ExternalSecret", "name", "e", "source", "argocd"),
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "ExternalSecret", "name", "t", "source", "argocd"),
				s("driftwatch_last_applied_truncated", 1, "namespace", "a", "kind", "ExternalSecret", "name", "t", "cause", "truncated_patch"),
				s("driftwatch_gitops_synced_entries_missing", 1, "namespace", "a", "kind", "Secret", "name", "s", "source", "argocd"),
			},
			[]string{"DriftwatchGitOpsSyncedEntriesMissing ExternalSecret a/e", "DriftwatchLastAppliedTruncated ExternalSecret a/t"}},
		{"Flux skips an object whose Git entries never ship: page",
			[]scrape.Series{s("driftwatch_flux_never_updated", 1, "namespace", "a", "kind", "Secret", "name", "db",
				"kustomization_namespace", "flux-system", "kustomization", "apps", "reason", "ssa_if_not_present", "set_in", "git")},
			[]string{"DriftwatchFluxNeverUpdated Secret a/db"}},
		{"Flux ignore trap: biting pages, not biting warns",
			[]scrape.Series{
				s("driftwatch_flux_ignore_trap", 1, "namespace", "flux-system", "kustomization", "apps", "kind", "Secret", "path", "/data", "biting", "true"),
				s("driftwatch_flux_ignore_trap", 1, "namespace", "flux-system", "kustomization", "infra", "kind", "Secret", "path", "/data", "biting", "false"),
			}, []string{"DriftwatchFluxIgnoreTrap flux-system/apps"}},
		{"a waiting sync is info",
			[]scrape.Series{s("driftwatch_secret_key_pending_sync", 1, "namespace", "a", "secret", "s", "key", "k", "source", "argocd")}, nil},
		{"warnings never page",
			[]scrape.Series{
				s("driftwatch_workload_stale_pods", 1, "namespace", "a", "workload_kind", "Deployment", "workload", "w", "secret", "s"),
				s("driftwatch_externalsecret_not_ready", 1, "namespace", "a", "externalsecret", "e", "reason", "r"),
				s("driftwatch_externalsecret_unsafe", 1, "namespace", "a", "externalsecret", "e", "reason", "r"),
			}, nil},
	} {
		var got []string
		for p := range Grade(tc.series) {
			got = append(got, p.String())
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: pages %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The classifier is the rules file: every critical rule that selects a finding
// family is read (none falls outside the subset), and every family the
// catalog makes critical is what one of them aggregates, so no critical
// family falls to the "critical <metric>" default.
func TestPageRulesAreTheRulesFile(t *testing.T) {
	rs, err := PageRules()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.alert)
	}
	covered := coveredFamilies(rs)
	sort.Strings(names)
	want := []string{"DriftwatchArgoCDIgnoreListTrap", "DriftwatchExternalSecretReadyButShort", "DriftwatchFluxIgnoreTrap",
		"DriftwatchFluxNeverUpdated", "DriftwatchGitOpsSyncedEntriesMissing", "DriftwatchLastAppliedTruncated",
		"DriftwatchSecretAbsentConsumed", "DriftwatchSecretFlapping", "DriftwatchSecretMissingKeyConsumed"}
	if !slices.Equal(names, want) {
		t.Errorf("critical finding rules read: %q\nwant %q", names, want)
	}
	for _, f := range finding.Catalog() {
		if f.Kind != finding.KindFinding || f.LintOnly {
			continue
		}
		critical := f.Severity == finding.SevCritical
		if f.SeverityBy != nil {
			for _, sev := range f.SeverityBy.Values {
				critical = critical || sev == finding.SevCritical
			}
		}
		if critical && !covered[f.Name] {
			t.Errorf("%s can be critical but no critical rule aggregates it (or what it restates)", f.Name)
		}
	}
}

// An expression outside the subset is refused, not half read.
func TestPageRuleParserRefusesWhatItCannotRead(t *testing.T) {
	for _, expr := range []string{
		`sum by (namespace) (rate(driftwatch_secret_flapping[5m])) > 0`,
		`max by (namespace, secret) (driftwatch_secret_flapping{job="driftwatch"})`,
		`max by (namespace, secret) (driftwatch_secret_flapping > 0) and on (namespace) driftwatch_no_such_metric`,
		`max by (namespace, secret) (driftwatch_secret_flapping > 0) * 2`,
		`max by (namespace, secret) (driftwatch_secret_flapping{secret=~"a.*"} > 0)`,
	} {
		if _, err := parseExpr(expr); err == nil {
			t.Errorf("%s: read", expr)
		}
	}
}

package pages

// The page classifier reads the shipped rules: every alert of
// alerts/driftwatch.rules.yaml with severity critical whose expression selects
// a finding family is parsed into the small subset of PromQL the page rules
// are written in, and evaluated on one scrape:
//
//	max by (L...) (SELECTOR > 0)
//	  [ (and | unless) on (L...) ( SELECTOR [> 0] { or SELECTOR [> 0] } ) ]
//
// A critical finding rule outside that subset is an error (the rule parser's
// test fails), so a new page cannot be missed here; a critical rule of the
// agent's own health (up, process_start_time_seconds) is not a finding page
// and is left out. The real Prometheus → Alertmanager chain of the e2e tests
// stays the primary oracle; this evaluator lets a scrape monitor judge every
// scrape without waiting for `for`.

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/alerts"
	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
)

// selector is METRIC{label="value",...}, compared > 0 when positive.
type selector struct {
	metric   string
	match    map[string]string
	positive bool
}

// pageRule is one critical finding rule.
type pageRule struct {
	alert   string
	by      []string
	primary selector
	// join: and (keep) or unless (drop) the groups whose on-labels match a
	// series of alts.
	joinOp string // "", "and", "unless"
	on     []string
	alts   []selector
}

// labels the scrape does not carry: Prometheus adds them (job) or a fleet
// does (cluster).
var targetLabels = map[string]bool{"job": true, "cluster": true}

func (s selector) matches(x scrape.Series) bool {
	if x.Name != s.metric || (s.positive && !(x.Value > 0)) {
		return false
	}
	for k, v := range s.match {
		if !targetLabels[k] && x.Labels[k] != v {
			return false
		}
	}
	return true
}

func key(labels map[string]string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		if targetLabels[n] {
			continue
		}
		b.WriteString(n + "=" + labels[n] + "\x00")
	}
	return b.String()
}

var (
	rulesOnce sync.Once
	rules     []pageRule
	rulesErr  error
)

// PageRules returns the critical finding rules of the shipped rules file,
// parsed; an error names a rule outside the subset.
func PageRules() ([]pageRule, error) {
	rulesOnce.Do(func() { rules, rulesErr = parsePageRules(alerts.Rules) })
	return rules, rulesErr
}

func parsePageRules(file []byte) ([]pageRule, error) {
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `json:"alert"`
				Expr   string            `json:"expr"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return nil, err
	}
	var out []pageRule
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] != string(finding.SevCritical) || !selectsFinding(r.Expr) {
				continue
			}
			p, err := parseExpr(r.Expr)
			if err != nil {
				return nil, fmt.Errorf("rule %s: %w", r.Alert, err)
			}
			p.alert = r.Alert
			out = append(out, p)
		}
	}
	return out, nil
}

// selectsFinding reports whether an expression names a finding family.
func selectsFinding(expr string) bool {
	for _, t := range tokenize(expr) {
		if f, ok := finding.Lookup(t); ok && f.Kind == finding.KindFinding {
			return true
		}
	}
	return false
}

func tokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				out = append(out, s[i:])
				return out
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		case c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == ':' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			out = append(out, s[i:i+1])
			i++
		}
	}
	return out
}

type parser struct {
	t []string
	i int
}

func (p *parser) peek() string {
	if p.i < len(p.t) {
		return p.t[p.i]
	}
	return ""
}

func (p *parser) next() string { s := p.peek(); p.i++; return s }

func (p *parser) want(s string) error {
	if got := p.next(); got != s {
		return fmt.Errorf("want %q at token %d, got %q", s, p.i-1, got)
	}
	return nil
}

func (p *parser) labelList() ([]string, error) {
	if err := p.want("("); err != nil {
		return nil, err
	}
	var out []string
	for {
		t := p.next()
		switch t {
		case ")":
			return out, nil
		case ",":
		case "":
			return nil, fmt.Errorf("unterminated label list")
		default:
			out = append(out, t)
		}
	}
}

func (p *parser) selector() (selector, error) {
	s := selector{metric: p.next(), match: map[string]string{}}
	if _, ok := finding.LookupAny(s.metric); !ok {
		return s, fmt.Errorf("%q is no metric of the catalog", s.metric)
	}
	if p.peek() == "{" {
		p.next()
		for p.peek() != "}" {
			name := p.next()
			if err := p.want("="); err != nil {
				return s, err
			}
			v := p.next()
			if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
				return s, fmt.Errorf("matcher %s: want a quoted value, got %q", name, v)
			}
			s.match[name] = v[1 : len(v)-1]
			if p.peek() == "," {
				p.next()
			}
			if p.peek() == "" {
				return s, fmt.Errorf("unterminated matchers")
			}
		}
		p.next()
	}
	if p.peek() == ">" {
		p.next()
		if err := p.want("0"); err != nil {
			return s, err
		}
		s.positive = true
	}
	return s, nil
}

func parseExpr(expr string) (pageRule, error) {
	p := &parser{t: tokenize(expr)}
	var r pageRule
	if err := p.want("max"); err != nil {
		return r, err
	}
	if err := p.want("by"); err != nil {
		return r, err
	}
	var err error
	if r.by, err = p.labelList(); err != nil {
		return r, err
	}
	if err := p.want("("); err != nil {
		return r, err
	}
	if r.primary, err = p.selector(); err != nil {
		return r, err
	}
	if !r.primary.positive {
		return r, fmt.Errorf("the aggregated selector must be compared > 0")
	}
	if err := p.want(")"); err != nil {
		return r, err
	}
	switch op := p.next(); op {
	case "":
		return r, nil
	case "and", "unless":
		r.joinOp = op
	default:
		return r, fmt.Errorf("unexpected %q after the aggregation", op)
	}
	if err := p.want("on"); err != nil {
		return r, err
	}
	if r.on, err = p.labelList(); err != nil {
		return r, err
	}
	paren := p.peek() == "("
	if paren {
		p.next()
	}
	for {
		s, err := p.selector()
		if err != nil {
			return r, err
		}
		r.alts = append(r.alts, s)
		if p.peek() != "or" {
			break
		}
		p.next()
	}
	if paren {
		if err := p.want(")"); err != nil {
			return r, err
		}
	}
	if t := p.next(); t != "" {
		return r, fmt.Errorf("unexpected %q at the end", t)
	}
	return r, nil
}

// pageObject names a page's object as the family's declaration resolves it:
// "namespace/name", or "Kind namespace/name" when the kind is a label.
func pageObject(metric string, labels map[string]string) string {
	f, ok := finding.Lookup(metric)
	if !ok || f.Object == nil {
		return labels["namespace"]
	}
	o := f.ObjectOf(labels)
	if f.Object.KindLabel != "" {
		return o.Qualified()
	}
	return o.String()
}

// evaluate returns the pages rule r fires on one scrape, each with the series
// that make it (the aggregated ones, then those an "and" joins in).
func (r *pageRule) evaluate(series []scrape.Series, out map[Page][]scrape.Series) {
	groups := map[string][]scrape.Series{}
	var order []string
	for _, s := range series {
		if !r.primary.matches(s) {
			continue
		}
		k := key(s.Labels, r.by)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	joined := map[string][]scrape.Series{}
	if r.joinOp != "" {
		for _, s := range series {
			for _, a := range r.alts {
				if a.matches(s) {
					k := key(s.Labels, r.on)
					joined[k] = append(joined[k], s)
					break
				}
			}
		}
	}
	sort.Strings(order)
	for _, k := range order {
		g := groups[k]
		var extra []scrape.Series
		if r.joinOp != "" {
			j, ok := joined[key(g[0].Labels, r.on)]
			if (r.joinOp == "and") != ok {
				continue
			}
			if r.joinOp == "and" {
				extra = j
			}
		}
		p := Page{Alert: r.alert, Object: pageObject(r.primary.metric, g[0].Labels)}
		out[p] = append(append(out[p], g...), extra...)
	}
}

// coveredFamilies: the families the rules aggregate, and the ones they
// restate or that restate them (Family.Restates: the per-key series of a
// Secret's missing keys pages through the Secret's count).
func coveredFamilies(rs []pageRule) map[string]bool {
	covered := map[string]bool{}
	for _, r := range rs {
		covered[r.primary.metric] = true
		if f, ok := finding.Lookup(r.primary.metric); ok && f.Restates != "" {
			covered[f.Restates] = true
		}
	}
	for _, f := range finding.Catalog() {
		if f.Restates != "" && covered[f.Restates] {
			covered[f.Name] = true
		}
	}
	return covered
}

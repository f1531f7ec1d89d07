package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/driftwatch/driftwatch/finding"
)

// Result of a run, and its exit status.
const (
	ResultPass  = "pass"  // exit 0: no finding at or above the threshold
	ResultFail  = "fail"  // exit 1: a finding at or above the threshold
	ResultError = "error" // exit 2: some input could not be checked
)

// Verdict returns the run's result for threshold failOn. Unreadable input wins:
// a run that could not check everything never passes, whatever it found in the
// rest.
func (r *Report) Verdict(failOn Severity) string {
	if r.Unreadable() {
		return ResultError
	}
	for _, f := range r.Findings {
		if f.Severity.Rank() >= failOn.Rank() {
			return ResultFail
		}
	}
	return ResultPass
}

// Counts counts the findings per severity.
func (r *Report) Counts() map[string]int {
	c := map[string]int{string(finding.SevCritical): 0, string(finding.SevWarning): 0, string(finding.SevInfo): 0}
	for _, f := range r.Findings {
		c[string(f.Severity)]++
	}
	return c
}

// JSONReport is the --output json document (schema version 1, docs/lint.md).
type JSONReport struct {
	SchemaVersion int            `json:"schema_version"`
	Result        string         `json:"result"`
	FailOn        Severity       `json:"fail_on"`
	Strict        bool           `json:"strict"`
	Counts        map[string]int `json:"counts"`
	Files         int            `json:"files"`
	Documents     int            `json:"documents"`
	Checked       map[string]int `json:"checked"`
	Silenced      int            `json:"silenced"`
	Findings      []Finding      `json:"findings"`
	Assumptions   []Assumption   `json:"assumptions"`
	Problems      []Problem      `json:"problems"`
}

// WriteJSON writes the JSON report.
func WriteJSON(w io.Writer, r *Report, failOn Severity, strict bool) error {
	out := JSONReport{SchemaVersion: 1, Result: r.Verdict(failOn), FailOn: failOn, Strict: strict, Counts: r.Counts(),
		Files: r.Files, Documents: r.Documents, Checked: r.Checked, Silenced: r.Silenced,
		Findings: r.Findings, Assumptions: r.Assumptions, Problems: r.Problems}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	if out.Assumptions == nil {
		out.Assumptions = []Assumption{}
	}
	if out.Problems == nil {
		out.Problems = []Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (l Location) String() string {
	s := l.File
	if l.Line > 0 {
		s = fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return s
}

func (l Location) detail() string {
	var parts []string
	if l.Item != nil {
		parts = append(parts, fmt.Sprintf("List item %d", *l.Item))
	}
	if l.What != "" {
		parts = append(parts, l.What)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// WriteText writes the findings grouped by file, "file:line: severity rule:
// message", then the problems, the assumptions (verbose) and a summary line.
func WriteText(w io.Writer, r *Report, failOn Severity, verbose bool) error {
	var b strings.Builder
	type entry struct {
		loc  Location
		text string
	}
	var entries []entry
	for _, f := range r.Findings {
		loc := Location{File: "-"}
		if len(f.Locations) > 0 {
			loc = f.Locations[0]
		}
		t := fmt.Sprintf("%s: %s %s: %s%s\n", loc, f.Severity, f.Rule, f.Message, Location{Item: loc.Item}.detail())
		for _, rel := range f.Locations[min(1, len(f.Locations)):] {
			t += fmt.Sprintf("    see %s%s\n", rel, rel.detail())
		}
		entries = append(entries, entry{loc, t})
	}
	for _, p := range r.Problems {
		if p.Note && !verbose {
			continue
		}
		kind := "error " + RuleMalformed
		if p.Note {
			kind = "note"
		}
		loc := Location{File: p.File, Line: p.Line}
		entries = append(entries, entry{loc, fmt.Sprintf("%s: %s: %s\n", loc, kind, p.Message)})
	}
	if verbose {
		for _, a := range r.Assumptions {
			loc := Location{File: "-"}
			if len(a.Locations) > 0 {
				loc = a.Locations[0]
			}
			entries = append(entries, entry{loc, fmt.Sprintf("%s: assumption (%s): %s%s\n", loc, a.Rule, a.Message, Location{Item: loc.Item}.detail())})
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i].loc, entries[j].loc
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	for i, e := range entries {
		if i > 0 && e.loc.File != entries[i-1].loc.File {
			b.WriteByte('\n')
		}
		b.WriteString(e.text)
	}
	if len(entries) > 0 {
		b.WriteByte('\n')
	}
	c := r.Counts()
	fmt.Fprintf(&b, "%s: %d critical, %d warning, %d info in %d documents of %d files (fail on %s and above)\n",
		strings.ToUpper(r.Verdict(failOn)), c["critical"], c["warning"], c["info"], r.Documents, r.Files, failOn)
	if r.Unreadable() {
		b.WriteString("Some input could not be checked (see the errors above): exit status 2.\n")
	}
	if r.Silenced > 0 {
		fmt.Fprintf(&b, "%d finding(s) silenced by driftwatch.io/ignore.\n", r.Silenced)
	}
	if n := len(r.Assumptions); n > 0 && !verbose {
		fmt.Fprintf(&b, "%d assumption(s) about objects or keys the rendering does not show: -v lists them, --strict reports them.\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRules lists every rule with its severity and a one-line why.
func WriteRules(w io.Writer) error {
	var b strings.Builder
	for _, r := range append(append([]*Rule(nil), Rules...), &malformedRule) {
		var sev []string
		for _, s := range r.Severities() {
			sev = append(sev, string(s))
		}
		fam := r.FamilyName()
		if r.Label != "" {
			fam += "{" + r.Label + "=\"" + r.Value + "\"}"
		}
		if fam == "" {
			fam = "(input)"
		}
		fmt.Fprintf(&b, "%-26s %-17s %s\n    %s\n", r.ID, strings.Join(sev, "/"), fam, r.Why)
		if r.Detector() != "" {
			fmt.Fprintf(&b, "    silence with driftwatch.io/ignore: %s\n", r.Detector())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SARIF 2.1.0 (the OASIS standard; GitHub code scanning reads it).

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifResult struct {
	RuleID           string          `json:"ruleId"`
	RuleIndex        int             `json:"ruleIndex"`
	Level            string          `json:"level"`
	Message          sarifText       `json:"message"`
	Locations        []sarifLocation `json:"locations"`
	RelatedLocations []sarifLocation `json:"relatedLocations,omitempty"`
	Properties       map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	ID               *int          `json:"id,omitempty"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
	Message          *sarifText    `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// SARIFLevel maps a severity to a SARIF level.
func SARIFLevel(s Severity) string {
	switch s {
	case finding.SevCritical:
		return "error"
	case finding.SevWarning:
		return "warning"
	}
	return "note"
}

// securitySeverity is GitHub's numeric security-severity of a level.
var securitySeverity = map[Severity]string{finding.SevCritical: "9.0", finding.SevWarning: "6.0", finding.SevInfo: "2.0"}

// fileURI turns a path into a SARIF artifact URI: relative paths stay relative
// (GitHub resolves them against the repository root), absolute ones are file
// URIs.
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: strings.TrimPrefix(p, "./")}).String()
}

func sarifLoc(l Location, id int) sarifLocation {
	sl := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(l.File)}}}
	if l.Line > 0 {
		sl.PhysicalLocation.Region = &sarifRegion{StartLine: l.Line}
	}
	if id >= 0 {
		i := id
		sl.ID = &i
		if d := strings.TrimSpace(strings.Trim(l.detail(), " ()")); d != "" {
			sl.Message = &sarifText{Text: d}
		}
	}
	return sl
}

// WriteSARIF writes a SARIF 2.1.0 log of one run: every rule (from the catalog:
// level from the severity, help from the family's declaration) and a result per
// finding and per document that could not be checked.
func WriteSARIF(w io.Writer, r *Report, version string) error {
	all := append(append([]*Rule(nil), Rules...), &malformedRule)
	index := map[string]int{}
	var rules []sarifRule
	for i, ru := range all {
		index[ru.ID] = i
		full := ru.Why
		class := "Input"
		if f := ru.Family(); f != nil {
			full = f.Help
			class = f.Class
		}
		sev := ru.DefaultSeverity()
		help := ru.Why + "\n\n"
		if ru.FamilyName() != "" {
			help += "Exporter metric: " + ru.FamilyName() + ". "
		}
		if ru.Detector() != "" {
			help += "Silence on an object or namespace with the annotation driftwatch.io/ignore: " + ru.Detector() + "."
		}
		rules = append(rules, sarifRule{ID: ru.ID, Name: ruleName(ru.ID),
			ShortDescription:     sarifText{Text: firstSentence(ru.Why)},
			FullDescription:      sarifText{Text: full},
			Help:                 sarifText{Text: strings.TrimSpace(help)},
			DefaultConfiguration: sarifConfig{Level: SARIFLevel(sev)},
			Properties: map[string]any{"tags": []string{"security", "kubernetes", class},
				"precision": "high", "security-severity": securitySeverity[sev]}})
	}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "driftwatch", Version: version, Rules: rules}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: !r.Unreadable()}}, Results: []sarifResult{}}
	for _, f := range r.Findings {
		res := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: SARIFLevel(f.Severity),
			Message:    sarifText{Text: f.Message},
			Properties: map[string]any{"severity": string(f.Severity), "class": f.Class, "object": f.Object.Qualified()}}
		for i, l := range f.Locations {
			if i == 0 {
				res.Locations = []sarifLocation{sarifLoc(l, -1)}
				continue
			}
			res.RelatedLocations = append(res.RelatedLocations, sarifLoc(l, i))
		}
		if len(res.Locations) == 0 {
			continue
		}
		run.Results = append(run.Results, res)
	}
	for _, p := range r.Problems {
		if p.Note {
			continue
		}
		l := sarifLoc(Location{File: p.File, Line: p.Line}, -1)
		run.Results = append(run.Results, sarifResult{RuleID: RuleMalformed, RuleIndex: index[RuleMalformed], Level: "error",
			Message: sarifText{Text: p.Message}, Locations: []sarifLocation{l}})
		run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications,
			sarifNotification{Level: "error", Message: sarifText{Text: p.Message}, Locations: []sarifLocation{l}})
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// ruleName is the rule ID in PascalCase (SARIF's reportingDescriptor.name).
func ruleName(id string) string {
	var b strings.Builder
	for _, p := range strings.Split(id, "_") {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

func firstSentence(s string) string {
	if i := strings.Index(s, ": "); i > 0 {
		return s[:i]
	}
	return s
}

package alerts

import (
	"regexp"
	"strings"
)

// valueLeaks are shell command shapes that print Secret values: decoding
// base64, a Secret dumped as YAML/JSON without a filter, jsonpath or jq into
// .data values, the view-secret plugin.
var valueLeaks = []*regexp.Regexp{
	regexp.MustCompile(`base64 +(-d|--decode|-D)\b`),
	regexp.MustCompile(`get +secrets?\b[^|\n]*-o *(yaml|json|wide)\b\s*$`),
	regexp.MustCompile(`\{\.data\.`),
	regexp.MustCompile(`\.data\[["']`),
	regexp.MustCompile(`\.data\.[A-Za-z_]`),
	regexp.MustCompile(`\bview-secret\b`),
}

// safeKeysJQ: jq filters that reduce a Secret to key names, lengths,
// managedFields or an object of chosen fields.
var safeKeysJQ = regexp.MustCompile(`\| *jq [^|]*'[^']*(keys|length|managedFields|\| *\{)`)

// CommandLeak says why a shell command line may print a Secret value ("" when
// it may not): the check the runbooks' commands pass (TestRunbooks), for every
// other place that shows commands to people (the findings page).
func CommandLeak(line string) string {
	for _, re := range valueLeaks {
		if re.MatchString(line) {
			return "matches " + re.String()
		}
	}
	if strings.Contains(line, "get secret") && strings.Contains(line, "-o json") && !safeKeysJQ.MatchString(line) {
		return "'get secret -o json' must pipe into a jq filter that keeps key names or metadata only"
	}
	if strings.Contains(line, "get secret") && strings.Contains(line, "{.data") && !safeKeysJQ.MatchString(line) {
		return "a jsonpath into .data must pipe into a jq filter that keeps key names only"
	}
	return ""
}

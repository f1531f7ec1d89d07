package finding

import (
	"regexp"
	"strings"
)

// Command is a copy-ready shell command shown with a finding. Commands print
// key names, conditions and metadata, never a value (internal/ui's
// TestCommandsPrintNoValues holds every command a family can produce to
// alerts.CommandLeak, the check the runbooks pass).
type Command struct {
	Purpose string // confirm or fix
	What    string
	Text    string
}

// CommandsFunc adds a family's confirm and fix commands for one finding to c.
type CommandsFunc func(c *Commands)

// Commands collects the commands for one finding.
type Commands struct {
	// F is the finding.
	F *Finding
	// Writers are the ExternalSecrets that write the finding's Secret, when
	// known.
	Writers []string
	out     []Command
}

// For returns the commands of a finding: its family's, else one that shows
// the object.
func For(f *Finding, writers []string) []Command {
	c := &Commands{F: f, Writers: writers}
	if f.Family != nil && f.Family.Commands != nil {
		f.Family.Commands(c)
	} else {
		c.Object()
	}
	return c.out
}

// Confirm adds a command that shows the failure.
func (c *Commands) Confirm(what, text string) {
	c.out = append(c.out, Command{Purpose: "confirm", What: what, Text: text})
}

// Fix adds a command that repairs it.
func (c *Commands) Fix(what, text string) {
	c.out = append(c.out, Command{Purpose: "fix", What: what, Text: text})
}

// NS is the object's namespace, quoted for the shell.
func (c *Commands) NS() string { return Sh(c.F.Object.Namespace) }

// Name is the object's name, quoted for the shell.
func (c *Commands) Name() string { return Sh(c.F.Object.Name) }

// L is a label's value, quoted for the shell.
func (c *Commands) L(k string) string { return Sh(c.F.Labels[k]) }

// SecretKeys shows the keys Secret n (quoted) holds, names only.
func (c *Commands) SecretKeys(n string) {
	c.Confirm("the keys the Secret holds (names only)", "kubectl -n "+c.NS()+" get secret "+n+" -o json | "+JQKeys)
}

// Restarts restarts the workloads that read the finding's object.
func (c *Commands) Restarts() {
	for _, w := range c.F.Consumers {
		if r := RolloutRef(w.Kind, w.Name); r != "" {
			c.Fix("restart "+w.Kind+" "+w.Name+" once the Secret is right (it reads it at start)",
				"kubectl -n "+c.NS()+" rollout restart "+Sh(r))
		}
	}
}

// Object shows the finding's object.
func (c *Commands) Object() {
	if c.F.Object.Kind != "" && c.F.Object.Name != "" {
		c.Confirm("the object", "kubectl -n "+c.NS()+" get "+Sh(strings.ToLower(c.F.Object.Kind))+" "+c.Name())
	}
}

// ExternalSecretConditions shows the conditions of the finding's ExternalSecret.
func (c *Commands) ExternalSecretConditions() {
	c.Confirm("the ExternalSecret's conditions", "kubectl -n "+c.NS()+" get externalsecret "+c.Name()+" -o json | "+JQCond)
}

// ExternalSecretRefresh shows the ExternalSecret's events and forces a refresh.
func (c *Commands) ExternalSecretRefresh() {
	c.Confirm("its events", "kubectl -n "+c.NS()+" get events --field-selector involvedObject.kind=ExternalSecret,involvedObject.name="+c.Name())
	c.Fix("once the cause is fixed, force a refresh", "kubectl -n "+c.NS()+" annotate externalsecret "+c.Name()+" force-sync=$(date +%s) --overwrite")
}

// jq programs the commands share: names, conditions and managers only.
const (
	JQKeys     = `jq '.data // {} | keys'`
	JQManagers = `jq '[.metadata.managedFields[] | {manager, operation, time}]'`
	JQCond     = `jq '[.status.conditions[]? | {type, status, reason, message}]'`
)

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9._/:=@%+-]+$`)

// Sh quotes a word for a POSIX shell when it needs it.
func Sh(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RolloutRef is the kubectl resource of a workload kind ("" when it has no
// rollout: bare pods, Jobs).
func RolloutRef(kind, name string) string {
	switch kind {
	case "Deployment":
		return "deploy/" + name
	case "StatefulSet":
		return "statefulset/" + name
	case "DaemonSet":
		return "daemonset/" + name
	}
	return ""
}

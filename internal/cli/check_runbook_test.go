package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// The text output says what to read next: the runbook of the alert that
// covers each finding, the same link the findings page shows.
func TestCheckTextLinksTheRunbook(t *testing.T) {
	objs := []runtime.Object{secretObj("app", "config", map[string][]byte{"A": []byte("1")}), checkPod("app", "worker", "flags")}
	code, out, errs := runCheck(t, coreOnly(objs...))
	if code != ExitFinding {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	want := "runbook: https://github.com/driftwatch/driftwatch/blob/main/docs/runbooks/DriftwatchSecretAbsentConsumed.md"
	if !strings.Contains(out, want) {
		t.Errorf("text output lacks %q:\n%s", want, out)
	}
}

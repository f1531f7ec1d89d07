package cli

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/agent"
)

// Context-qualified references read each Secret through its own context (two
// clusters); unqualified ones use --context.
func TestCompareAcrossContexts(t *testing.T) {
	staging := fake.NewClientset(secretObj("apps", "api-config", map[string][]byte{"a": []byte("1"), "b": []byte("2")}))
	prod := fake.NewClientset(secretObj("apps", "api-config", map[string][]byte{"a": []byte("1"), "b": []byte("3\n")}))
	var asked []string
	connect := func(_, kctx string) (agent.Clients, error) {
		asked = append(asked, kctx)
		switch kctx {
		case "staging":
			return agent.Clients{Core: staging}, nil
		case "prod", "":
			return agent.Clients{Core: prod}, nil
		}
		return agent.Clients{}, fmt.Errorf("context %q does not exist", kctx)
	}
	code, out, errs := runCompare(t, connect, "staging:apps/api-config", "prod:apps/api-config")
	if code != ExitFinding || !strings.Contains(out, "a: MATCH") || !strings.Contains(out, "b: MISMATCH (1 vs 2 bytes)") ||
		!strings.Contains(out, "live staging:apps/api-config vs store prod:apps/api-config") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if strings.Join(asked, ",") != "staging,prod" {
		t.Errorf("contexts connected: %v", asked)
	}
	asked = nil
	if code, _, _ := runCompare(t, connect, "--context", "staging", "apps/api-config", "staging:apps/api-config"); code != ExitOK ||
		strings.Join(asked, ",") != "staging" {
		t.Errorf("same context twice: exit %d, connected %v", code, asked)
	}
	if code, _, errs := runCompare(t, connect, "nowhere:apps/api-config", "apps/api-config"); code != ExitError ||
		!strings.Contains(errs, `context "nowhere" does not exist`) {
		t.Errorf("unknown context: exit %d %q", code, errs)
	}
	for _, bad := range []string{":apps/x", "staging:x", "staging:apps/x/y"} {
		if code, _, errs := runCompare(t, connect, bad, "apps/api-config"); code != ExitError || !strings.Contains(errs, "want NAMESPACE/NAME") {
			t.Errorf("%q: exit %d %q", bad, code, errs)
		}
	}
}

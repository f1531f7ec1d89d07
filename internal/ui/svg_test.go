package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// Text in the picture comes from the cluster (field manager names are free
// text): every piece is escaped, and missing keys and broken links are marked.
func TestSVGEscapesAndMarks(t *testing.T) {
	st := model.NewStore(nil)
	now := time.Now()
	evil := `<script>alert("x")</script>&`
	st.UpsertSecret(mt.WithManagers(mt.Secret("ns", "app", "A"), mt.Write(evil, now)), now)
	st.UpsertPod(mt.WithWorkload(mt.Pod("ns", "web-1", mt.Env("app", "B"), mt.Env("app", "A")), "Deployment", "web"))
	fam, _ := finding.Lookup("driftwatch_secret_missing_key")
	fs := []finding.Finding{{Family: fam, Class: fam.Class, Metric: fam.Name, Severity: finding.SevCritical, Object: finding.Object{Kind: "Secret", Namespace: "ns", Name: "app"},
		Labels: map[string]string{"namespace": "ns", "secret": "app", "key": "B", "source": "pod", "optional": "false"}, Value: 1}}
	var svg string
	st.Read(func(v model.View) { svg = string(buildPath(v, "ns", "app", fs).SVG()) })
	if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;") {
		t.Errorf("manager name not escaped:\n%s", svg)
	}
	for _, want := range []string{`aria-label="Delivery path of Secret ns/app; missing keys: B"`, `<text class="miss" x="`, ">missing: B</text>",
		`<path class="e bad"`, ">reads: A, B</text>", ">1 pod · env</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q:\n%s", want, svg)
		}
	}
	// Healthy: nothing red.
	st.Read(func(v model.View) { svg = string(buildPath(v, "ns", "app", nil).SVG()) })
	if strings.Contains(svg, "bad") || strings.Contains(svg, "miss") {
		t.Errorf("a path without findings is marked broken:\n%s", svg)
	}
}

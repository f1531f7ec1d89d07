package detect

import (
	"slices"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// FluxMissingEntries: the entries a Flux build declares that the live object
// lacks. Its callers (the Flux ignore trap and never-updated detectors) judge
// paths of a Secret's data and an ExternalSecret's spec.data, so template keys
// are not its entries (a /spec/data ignore rule does not keep a template key
// from shipping); SyncedEntries (Argo CD) judges the whole spec.
func TestFluxMissingEntries(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t,
		mt.Secret(ns, "creds", "USER", "PASS"),
		mt.ES(ns, "es", mt.ESData("A", "B"), mt.ESTemplate("", "rendered")),
	)
	es := func(keys ...string) *model.ESWrites {
		return &model.ESWrites{DataKeys: keys, TemplateKeys: []string{"rendered", "declared-template-key"}}
	}
	for _, tc := range []struct {
		name    string
		o       model.Declared
		missing []string
		absent  bool
	}{
		{"Secret with every declared key", model.Declared{Kind: "Secret", Namespace: ns, Name: "creds", Keys: []string{"PASS", "USER"}}, nil, false},
		{"Secret without one declared key", model.Declared{Kind: "Secret", Namespace: ns, Name: "creds", Keys: []string{"PASS", "TOKEN", "USER"}}, []string{"TOKEN"}, false},
		{"Secret absent: every key missing", model.Declared{Kind: "Secret", Namespace: ns, Name: "gone", Keys: []string{"X", "Y"}}, []string{"X", "Y"}, true},
		{"ExternalSecret with every spec.data entry (template keys not judged)", model.Declared{Kind: "ExternalSecret", Namespace: ns, Name: "es", ES: es("A", "B")}, nil, false},
		{"ExternalSecret without one spec.data entry", model.Declared{Kind: "ExternalSecret", Namespace: ns, Name: "es", ES: es("A", "B", "C")}, []string{"C"}, false},
		{"ExternalSecret entry without a secretKey is skipped", model.Declared{Kind: "ExternalSecret", Namespace: ns, Name: "es", ES: es("A", "")}, nil, false},
		{"ExternalSecret absent", model.Declared{Kind: "ExternalSecret", Namespace: ns, Name: "none", ES: es("A")}, []string{"A"}, true},
		{"ExternalSecret object the build could not read (no ES)", model.Declared{Kind: "ExternalSecret", Namespace: ns, Name: "es"}, nil, false},
		{"another kind", model.Declared{Kind: "ConfigMap", Namespace: ns, Name: "creds"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var missing []string
			var absent bool
			mt.Read(s, func(v model.View) bool { missing, absent = FluxMissingEntries(v, tc.o); return true })
			if !slices.Equal(missing, tc.missing) || absent != tc.absent {
				t.Errorf("got %v absent=%v, want %v absent=%v", missing, absent, tc.missing, tc.absent)
			}
		})
	}
}

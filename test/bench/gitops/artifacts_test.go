package main

import (
	"context"
	"slices"
	"testing"

	"github.com/driftwatch/driftwatch/internal/flux/build"
	"github.com/driftwatch/driftwatch/internal/flux/desired"
)

// The bench's artifacts are readable by the agent's own reader and build as
// the bench expects (no stack: a few builds, a few seconds).
func TestArtifacts(t *testing.T) {
	tmp := t.TempDir()
	a0, err := makeArtifact(tmp, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	decl, err := declaredByK(10, a0)
	if err != nil {
		t.Fatal(err)
	}
	for k, objs := range decl {
		if len(objs) != 10 {
			t.Errorf("Kustomization %d declares %d Secrets and ExternalSecrets, want 10", k, len(objs))
		}
	}
	if got := driftedK(10); got != 9 {
		t.Errorf("drifted Kustomization %d, want 9 (the last by name)", got)
	}
	a1, err := makeArtifact(tmp, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a1.digest == a0.digest || a1.revision == a0.revision {
		t.Fatal("revision 1 has the digest or revision of revision 0")
	}
	fs, err := desired.ReadTarGz(context.Background(), a1.body, desired.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	r, err := build.Build(map[string]any{"spec": ksSpec(0, 3)}, fs)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range r.Objects {
		if o.Kind == "Secret" && o.Name == ksPrefix(3)+"db-0" {
			found = slices.Contains(o.Keys, newKey)
		}
	}
	if !found {
		t.Errorf("revision 1 does not declare %s in db-0", newKey)
	}
}

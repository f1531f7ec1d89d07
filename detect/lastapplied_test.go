package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestLastAppliedTruncated(t *testing.T) {
	const ns = "app"
	helmES := func(name string, keys ...string) model.Declared {
		return mt.HelmES("", name, name, keys...)
	}
	argoApp := model.Ref{Namespace: "argocd", Name: "app"}
	tests := []struct {
		name  string
		objs  []any
		avail model.Availability
		want  []Truncation
	}{
		{
			name: "all three agree",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 1, "deployed", helmES("db", "A", "B"))}},
		},
		{
			name: "no annotation: nothing to compare",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"))}},
		},
		{
			name: "Helm desired longer than last-applied: truncated_patch",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 2, "deployed", helmES("db", "A", "B", "C", "D"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 2}},
		},
		{
			name: "truncated_patch wins over a live object that is shorter still",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 2, "deployed", helmES("db", "A", "B", "C"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 1}},
		},
		{
			name: "last-applied matches desired, live shorter: reverted_after_apply",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B", "C")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 1, "deployed", helmES("db", "A", "B", "C"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseRevertedAfterApply, 2}},
		},
		{
			name: "superseded Helm revision is not the desired state",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{
					mt.HelmRelease(ns, "db", 1, "superseded", helmES("db", "A", "B", "C")),
					mt.HelmRelease(ns, "db.v2", 2, "deployed", helmES("db", "A", "B")),
				}},
		},
		{
			name: "Argo CD target state is the desired list, before Helm",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 1, "deployed", helmES("db", "A", "B"))},
				mt.App(argoApp.Namespace, argoApp.Name, mt.AppDelivered(mt.Rev, mt.DesiredES(ns, "db", ""))),
				mt.Desired{App: argoApp, Objects: []model.Declared{mt.DesiredES(ns, "db", "", "A", "B", "NEW")}}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 1}},
		},
		{
			// A manual sync not yet run: Argo CD compares the new revision and
			// has applied nothing of it. Not what was applied: Helm's list is.
			name: "Argo CD target state of a pending revision is not the desired list",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 1, "deployed", helmES("db", "A", "B"))},
				mt.App(argoApp.Namespace, argoApp.Name, mt.AppBehind("r1", "r2", mt.DesiredES(ns, "db", ""))),
				mt.Desired{App: argoApp, Revision: "r2", Objects: []model.Declared{mt.DesiredES(ns, "db", "", "A", "B", "NEW")}}},
		},
		{
			name: "no desired source, live shorter than last-applied",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			// Only while the writer holds the list: a mutating webhook that
			// adds an entry to what kubectl applied.
			name: "no desired source, last-applied shorter than live",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B", "C"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLastAppliedShorter, 1}},
		},
		{
			// Real kubectl: `kubectl patch` of spec.data moves f:spec.f:data to
			// manager kubectl-patch and leaves the annotation as it was.
			name: "list patched or edited after the apply: the annotation is frozen history, nothing",
			objs: []any{[]*model.ExternalSecret{
				mt.ES(ns, "added", mt.ESData("A", "B", "C"), mt.ESLastApplied(mt.Frozen(mt.LastAppliedES("A", "B")))),
				mt.ES(ns, "removed", mt.ESData("A"), mt.ESLastApplied(mt.Frozen(mt.LastAppliedES("A", "B")))),
			}},
		},
		{
			name: "list taken over by Helm: frozen history even against a desired list",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A", "B", "C"), mt.ESLastApplied(mt.Frozen(mt.LastAppliedES("A"))))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 2, "deployed", helmES("db", "A", "B", "C"))}},
		},
		{
			name: "reordering is not a finding",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("B", "A"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))}},
		},
		{
			name: "duplicate entries count as entries",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "A")))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			name: "malformed annotation: skipped",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(&model.LastApplied{Err: "malformed", Size: 10}))}},
		},
		{
			name: "annotation of another name (copied): skipped",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(&model.LastApplied{Kind: "ExternalSecret", Name: "other", SpecDataKeys: []string{"A", "B"}}))}},
		},
		{
			name:  "ExternalSecrets unavailable: silent",
			objs:  []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))}},
			avail: mt.AllBut(model.ResExternalSecrets),
		},
		{
			name: "Helm unavailable: compared without a desired source",
			objs: []any{[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A", "B")))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "db", 1, "deployed", helmES("db", "A", "B", "C"))}},
			avail: mt.AllBut(model.ResHelmReleases),
			want:  []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			name: "Secret: ESO copied the ExternalSecret's annotation: not judged as a Secret",
			objs: []any{[]*model.Secret{mt.WithLastApplied(mt.Secret(ns, "db", "A"), &model.LastApplied{Kind: "ExternalSecret", Name: "db", SpecDataKeys: []string{"A", "B", "C"}})},
				[]*model.ExternalSecret{mt.ES(ns, "db", mt.ESData("A"), mt.ESLastApplied(mt.LastAppliedES("A")))}},
		},
		{
			// Real kubectl: a key removed with kubectl patch leaves no managedFields
			// entry of its own; the client-side apply entry is still the newest data
			// write. The next apply restores it.
			name: "Secret: a key removed after apply",
			objs: []any{[]*model.Secret{mt.WithLastApplied(mt.Secret(ns, "cfg", "user"), mt.LastAppliedSecret("password", "user"))}},
			want: []Truncation{{ns, "Secret", "cfg", CauseLiveShorter, 1}},
		},
		{
			name: "Secret: a key removed, and another manager wrote data since: frozen history",
			objs: []any{[]*model.Secret{mt.WithLastApplied(mt.Secret(ns, "cfg", "user"), mt.Frozen(mt.LastAppliedSecret("password", "user")))}},
		},
		{
			name: "Secret: Helm desired keys, last-applied short",
			objs: []any{[]*model.Secret{mt.WithLastApplied(mt.Secret(ns, "cfg", "user"), mt.LastAppliedSecret("user"))},
				[]*model.HelmRelease{mt.HelmRelease(ns, "cfg", 1, "deployed", mt.HelmSecret("", "cfg", "password", "user"))}},
			want: []Truncation{{ns, "Secret", "cfg", CauseTruncatedPatch, 1}},
		},
		{
			name: "Secret: keys ESO merges in are not 'last-applied shorter'",
			objs: []any{[]*model.Secret{mt.WithLastApplied(mt.Secret(ns, "cfg", "user", "token"), mt.LastAppliedSecret("user"))},
				[]*model.ExternalSecret{mt.ES(ns, "cfg-es", mt.ESData("token"), mt.ESTarget("cfg"))}},
		},
		{
			// Real kubectl: keys only in live survive every client-side apply of a
			// Secret (strategic merge of a map). The token controller's
			// token/ca.crt/namespace, argocd-server's server.secretkey in the
			// data-less argocd-secret, a key added with kubectl patch.
			name: "Secret: keys only in live (controller-filled, patched in) are never 'last-applied shorter'",
			objs: []any{[]*model.Secret{
				mt.WithLastApplied(mt.Secret(ns, "sa-token", "ca.crt", "namespace", "token"), mt.LastAppliedSecret()),
				mt.WithLastApplied(mt.Secret(ns, "argocd-secret", "server.secretkey"), mt.LastAppliedSecret()),
				mt.WithLastApplied(mt.Secret(ns, "cfg", "user", "extra"), mt.LastAppliedSecret("user")),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			avail := tt.avail
			if avail == nil {
				avail = mt.All()
			}
			var got []Truncation
			mt.NewStore(t, tt.objs...).Read(func(v model.View) { got = LastAppliedTruncated(v, avail) })
			if !(len(got) == 0 && len(tt.want) == 0) && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMissingFrom(t *testing.T) {
	for _, tt := range []struct {
		want, have []string
		n          int
	}{
		{nil, nil, 0},
		{[]string{"a"}, nil, 1},
		{[]string{"a", "b"}, []string{"b", "a"}, 0},
		{[]string{"a", "a"}, []string{"a"}, 1},
		{[]string{"a"}, []string{"a", "a", "b"}, 0},
	} {
		if got := missingFrom(tt.want, tt.have); got != tt.n {
			t.Errorf("missingFrom(%v, %v) = %d, want %d", tt.want, tt.have, got, tt.n)
		}
	}
}

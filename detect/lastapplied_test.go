package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Self-contained fixtures for the GitOps detectors (prefixed gt to stay clear of
// other test files' helpers).

var t0gt = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func gtMeta(ns, name string) model.ObjectMeta { return model.ObjectMeta{Namespace: ns, Name: name} }

func gtAll() model.Availability {
	a := model.Availability{}
	for _, r := range model.AllResources {
		a[r] = true
	}
	return a
}

// gtESLA is a last-applied annotation whose writer still holds the newest
// write of spec.data (the evidence is current).
func gtESLA(keys ...string) *model.LastApplied {
	return &model.LastApplied{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", SpecDataKeys: keys, HasSpecData: true, HoldsList: true}
}

// gtStale marks a last-applied annotation as frozen history: another manager
// wrote the list after it (kubectl patch or edit, server-side apply, Helm).
func gtStale(la *model.LastApplied) *model.LastApplied {
	la.HoldsList = false
	return la
}

func gtSecretLA(keys ...string) *model.LastApplied {
	return &model.LastApplied{APIVersion: "v1", Kind: "Secret", DataKeys: keys, HoldsList: true}
}

func gtES(ns, name string, live []string, la *model.LastApplied) *model.ExternalSecret {
	if la != nil && la.Name == "" {
		la.Name = name
	}
	return &model.ExternalSecret{ObjectMeta: gtMeta(ns, name), APIVersion: "external-secrets.io/v1", Target: name,
		DataKeys: live, LastApplied: la, Ready: model.Condition{Status: "True", Reason: "SecretSynced"}}
}

func gtSecret(ns, name string, live []string, la *model.LastApplied) *model.Secret {
	s := &model.Secret{ObjectMeta: gtMeta(ns, name), Type: "Opaque", Keys: model.KeySet{}, LastApplied: la}
	for _, k := range live {
		s.Keys.Set(k, model.KeyInfo{Len: 3})
	}
	return s
}

func gtHelm(ns, rel string, rev int, status string, exps ...model.HelmExpectation) *model.HelmRelease {
	return &model.HelmRelease{ObjectMeta: gtMeta(ns, "sh.helm.release.v1."+rel), Release: rel, Revision: rev, Status: status, Expectations: exps}
}

type gtFixture struct {
	secrets  []*model.Secret
	es       []*model.ExternalSecret
	releases []*model.HelmRelease
	apps     []*model.ArgoApp
	desired  map[model.Ref][]model.DesiredObject
}

func (f gtFixture) store() *model.Store {
	s := model.NewStore(nil)
	for _, x := range f.secrets {
		s.UpsertSecret(x, t0gt)
	}
	for _, x := range f.es {
		s.UpsertExternalSecret(x)
	}
	for _, x := range f.releases {
		s.UpsertHelmRelease(x)
	}
	for _, x := range f.apps {
		s.UpsertApp(x)
	}
	for app, items := range f.desired {
		s.SetArgoDesired(app, items)
	}
	return s
}

func TestLastAppliedTruncated(t *testing.T) {
	const ns = "app"
	helmES := func(name string, keys ...string) model.HelmExpectation {
		return model.HelmExpectation{Kind: "ExternalSecret", Name: name, Target: name, Keys: keys, SpecDataKeys: keys}
	}
	argoApp := model.Ref{Namespace: "argocd", Name: "app"}
	tests := []struct {
		name  string
		f     gtFixture
		avail model.Availability
		want  []Truncation
	}{
		{
			name: "all three agree",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 1, "deployed", helmES("db", "A", "B"))}},
		},
		{
			name: "no annotation: nothing to compare",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, nil)}},
		},
		{
			name: "Helm desired longer than last-applied: truncated_patch",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 2, "deployed", helmES("db", "A", "B", "C", "D"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 2}},
		},
		{
			name: "truncated_patch wins over a live object that is shorter still",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 2, "deployed", helmES("db", "A", "B", "C"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 1}},
		},
		{
			name: "last-applied matches desired, live shorter: reverted_after_apply",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "B", "C"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 1, "deployed", helmES("db", "A", "B", "C"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseRevertedAfterApply, 2}},
		},
		{
			name: "superseded Helm revision is not the desired state",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{
					gtHelm(ns, "db", 1, "superseded", helmES("db", "A", "B", "C")),
					gtHelm(ns, "db.v2", 2, "deployed", helmES("db", "A", "B")),
				}},
		},
		{
			name: "Argo CD target state is the desired list, before Helm",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 1, "deployed", helmES("db", "A", "B"))},
				desired: map[model.Ref][]model.DesiredObject{argoApp: {{Group: "external-secrets.io", Kind: "ExternalSecret",
					Namespace: ns, Name: "db", SpecDataKeys: []string{"A", "B", "NEW"}, HasSpecData: true}}}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseTruncatedPatch, 1}},
		},
		{
			name: "no desired source, live shorter than last-applied",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "B"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			// Only while the writer holds the list: a mutating webhook that
			// adds an entry to what kubectl applied.
			name: "no desired source, last-applied shorter than live",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B", "C"}, gtESLA("A", "B"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLastAppliedShorter, 1}},
		},
		{
			// Real kubectl: `kubectl patch` of spec.data moves f:spec.f:data to
			// manager kubectl-patch and leaves the annotation as it was.
			name: "list patched or edited after the apply: the annotation is frozen history, nothing",
			f: gtFixture{es: []*model.ExternalSecret{
				gtES(ns, "added", []string{"A", "B", "C"}, gtStale(gtESLA("A", "B"))),
				gtES(ns, "removed", []string{"A"}, gtStale(gtESLA("A", "B"))),
			}},
		},
		{
			name: "list taken over by Helm: frozen history even against a desired list",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A", "B", "C"}, gtStale(gtESLA("A")))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 2, "deployed", helmES("db", "A", "B", "C"))}},
		},
		{
			name: "reordering is not a finding",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"B", "A"}, gtESLA("A", "B"))}},
		},
		{
			name: "duplicate entries count as entries",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "A"))}},
			want: []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			name: "malformed annotation: skipped",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, &model.LastApplied{Err: "malformed", Size: 10})}},
		},
		{
			name: "annotation of another name (copied): skipped",
			f:    gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, &model.LastApplied{Kind: "ExternalSecret", Name: "other", SpecDataKeys: []string{"A", "B"}})}},
		},
		{
			name:  "ExternalSecrets unavailable: silent",
			f:     gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "B"))}},
			avail: func() model.Availability { a := gtAll(); a[model.ResExternalSecrets] = false; return a }(),
		},
		{
			name: "Helm unavailable: compared without a desired source",
			f: gtFixture{es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A", "B"))},
				releases: []*model.HelmRelease{gtHelm(ns, "db", 1, "deployed", helmES("db", "A", "B", "C"))}},
			avail: func() model.Availability { a := gtAll(); a[model.ResHelmReleases] = false; return a }(),
			want:  []Truncation{{ns, "ExternalSecret", "db", CauseLiveShorter, 1}},
		},
		{
			name: "Secret: ESO copied the ExternalSecret's annotation: not judged as a Secret",
			f: gtFixture{secrets: []*model.Secret{gtSecret(ns, "db", []string{"A"}, &model.LastApplied{Kind: "ExternalSecret", Name: "db", SpecDataKeys: []string{"A", "B", "C"}})},
				es: []*model.ExternalSecret{gtES(ns, "db", []string{"A"}, gtESLA("A"))}},
		},
		{
			// Real kubectl: a key removed with kubectl patch leaves no managedFields
			// entry of its own; the client-side apply entry is still the newest data
			// write. The next apply restores it.
			name: "Secret: a key removed after apply",
			f:    gtFixture{secrets: []*model.Secret{gtSecret(ns, "cfg", []string{"user"}, gtSecretLA("password", "user"))}},
			want: []Truncation{{ns, "Secret", "cfg", CauseLiveShorter, 1}},
		},
		{
			name: "Secret: a key removed, and another manager wrote data since: frozen history",
			f:    gtFixture{secrets: []*model.Secret{gtSecret(ns, "cfg", []string{"user"}, gtStale(gtSecretLA("password", "user")))}},
		},
		{
			name: "Secret: Helm desired keys, last-applied short",
			f: gtFixture{secrets: []*model.Secret{gtSecret(ns, "cfg", []string{"user"}, gtSecretLA("user"))},
				releases: []*model.HelmRelease{gtHelm(ns, "cfg", 1, "deployed", model.HelmExpectation{Kind: "Secret", Name: "cfg", Keys: []string{"password", "user"}})}},
			want: []Truncation{{ns, "Secret", "cfg", CauseTruncatedPatch, 1}},
		},
		{
			name: "Secret: keys ESO merges in are not 'last-applied shorter'",
			f: gtFixture{secrets: []*model.Secret{gtSecret(ns, "cfg", []string{"user", "token"}, gtSecretLA("user"))},
				es: []*model.ExternalSecret{func() *model.ExternalSecret {
					e := gtES(ns, "cfg-es", []string{"token"}, nil)
					e.Target = "cfg"
					return e
				}()}},
		},
		{
			// Real kubectl: keys only in live survive every client-side apply of a
			// Secret (strategic merge of a map). The token controller's
			// token/ca.crt/namespace, argocd-server's server.secretkey in the
			// data-less argocd-secret, a key added with kubectl patch.
			name: "Secret: keys only in live (controller-filled, patched in) are never 'last-applied shorter'",
			f: gtFixture{secrets: []*model.Secret{
				gtSecret(ns, "sa-token", []string{"ca.crt", "namespace", "token"}, gtSecretLA()),
				gtSecret(ns, "argocd-secret", []string{"server.secretkey"}, gtSecretLA()),
				gtSecret(ns, "cfg", []string{"user", "extra"}, gtSecretLA("user")),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			avail := tt.avail
			if avail == nil {
				avail = gtAll()
			}
			var got []Truncation
			tt.f.store().Read(func(v model.View) { got = LastAppliedTruncated(v, avail) })
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

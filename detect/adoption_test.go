package detect

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

func TestUnsafeExternalSecrets(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(migNow.Add(d)) }
	withES := func(mod func(e *model.ExternalSecret)) *model.ExternalSecret {
		e := migES("ns", "es", "target")
		mod(e)
		return e
	}
	esoOwned := func(s *model.Secret) *model.Secret {
		s.Owners = []model.OwnerRef{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "es", Controller: true}}
		s.Managers = []model.ManagedField{{Manager: "externalsecrets.external-secrets.io/es", Operation: "Update", OwnsData: true}}
		return s
	}
	target := func(kv ...string) *model.Secret { return migSecret("ns", "target", kv...) }
	cases := []struct {
		name    string
		es      *model.ExternalSecret
		secrets []*model.Secret
		pods    []*model.Pod
		avail   model.Availability
		want    []string // reasons
	}{
		{name: "healthy owner", es: migES("ns", "es", "target"), secrets: []*model.Secret{esoOwned(target("a", "1"))}},
		{name: "no target yet", es: migES("ns", "es", "target")},
		{name: "implicit creationPolicy from last-applied",
			es: withES(func(e *model.ExternalSecret) {
				e.LastApplied = &model.LastApplied{Kind: "ExternalSecret", HasSpecData: true, HoldsCreationPolicy: true}
			}), want: []string{UnsafeImplicitCreationPolicy}},
		{name: "explicit creationPolicy in last-applied",
			es: withES(func(e *model.ExternalSecret) {
				e.LastApplied = &model.LastApplied{Kind: "ExternalSecret", CreationPolicySet: true, HoldsCreationPolicy: true}
			})},
		{name: "last-applied without creationPolicy, but another manager set it since: frozen history",
			es: withES(func(e *model.ExternalSecret) {
				e.LastApplied = &model.LastApplied{Kind: "ExternalSecret", HasSpecData: true}
			})},
		{name: "last-applied of another kind or unparsable is not judged",
			es: withES(func(e *model.ExternalSecret) { e.LastApplied = &model.LastApplied{Kind: "Secret"} })},
		{name: "unparsable last-applied",
			es: withES(func(e *model.ExternalSecret) {
				e.LastApplied = &model.LastApplied{Kind: "ExternalSecret", Err: "last-applied: truncated"}
			})},
		{name: "server-side apply only: not knowable, not reported",
			es: withES(func(e *model.ExternalSecret) {
				e.Managers = []model.ManagedField{{Manager: "kubectl", Operation: "Apply", OwnsData: true}}
			})},
		{name: "owner over a Secret created earlier, not taken over yet",
			es: withES(func(e *model.ExternalSecret) { e.CreationTimestamp = at(0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				s.CreationTimestamp = at(-time.Hour)
				return s
			}()},
			want: []string{UnsafeOwnerOverExisting}},
		{name: "owner over a Secret created earlier that ESO has taken over: legitimate now, cleared",
			es: withES(func(e *model.ExternalSecret) { e.CreationTimestamp = at(0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := esoOwned(target("a", "1")) // ESO took it over: the ownerReference is there now
				s.CreationTimestamp = at(-time.Hour)
				s.Managers = append(s.Managers, model.ManagedField{Manager: "kubectl-client-side-apply", Operation: "Update", OwnsData: true})
				return s
			}()}},
		{name: "creationPolicy None: ESO writes nothing, no adoption rule applies",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy, e.CreationTimestamp = "None", "Delete", at(0)
				e.DataFrom, e.DataFromFind = 1, 1
				e.ExpectedKeys = []string{"A"}
			}),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("A", "1", "B", "2")
				s.CreationTimestamp = at(-time.Hour)
				return s
			}()}},
		{name: "owner over a Secret with another writer's data and no ownerReference",
			es: migES("ns", "es", "target"),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				s.Managers = []model.ManagedField{{Manager: "kubectl-client-side-apply", Operation: "Update", OwnsData: true}}
				return s
			}()},
			want: []string{UnsafeOwnerOverExisting}},
		{name: "ESO-created target, created after the ES",
			es: withES(func(e *model.ExternalSecret) { e.CreationTimestamp = at(0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := esoOwned(target("a", "1"))
				s.CreationTimestamp = at(time.Second)
				return s
			}()}},
		{name: "merge over someone else's Secret is the point of Merge",
			es: withES(func(e *model.ExternalSecret) { e.CreationPolicy = "Merge"; e.CreationTimestamp = at(0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				s.CreationTimestamp = at(-time.Hour)
				return s
			}()}},
		{name: "delete with merge",
			es:   withES(func(e *model.ExternalSecret) { e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete" }),
			want: []string{UnsafeDeleteWithMerge}},
		{name: "delete with owner is fine",
			es: withES(func(e *model.ExternalSecret) { e.DeletionPolicy = "Delete" })},
		{name: "dataFrom.find pulls keys nobody names",
			es:      withES(func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = 1, 1; e.ExpectedKeys = []string{"DB_URL"} }),
			secrets: []*model.Secret{esoOwned(target("DB_URL", "x", "parked-old-key", "y"))},
			want:    []string{UnsafeUnexpectedKeys}},
		{name: "dataFrom.find with every key named by a pod",
			es:      withES(func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = 1, 1 }),
			secrets: []*model.Secret{esoOwned(target("A", "x", "B", "y"))},
			pods: []*model.Pod{{ObjectMeta: migMeta("ns", "p"), Phase: "Running", Workload: model.Workload{Kind: "Pod", Name: "p"},
				Uses: []model.SecretUse{{Secret: "target", Key: "A", Via: model.ViaEnv}, {Secret: "target", Key: "B", Via: model.ViaEnv}}}}},
		{name: "dataFrom.find read by envFrom plus one secretKeyRef: a lower bound, not a declared set",
			es:      withES(func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = 1, 1 }),
			secrets: []*model.Secret{esoOwned(target("A", "x", "B", "y"))},
			pods: []*model.Pod{{ObjectMeta: migMeta("ns", "p"), Phase: "Running", Workload: model.Workload{Kind: "Pod", Name: "p"},
				Uses: []model.SecretUse{{Secret: "target", Via: model.ViaEnvFrom}, {Secret: "target", Key: "A", Via: model.ViaEnv}}}}},
		{name: "data combined with dataFrom.find: the find's keys are expected by design",
			es: withES(func(e *model.ExternalSecret) {
				e.DataKeys = []string{"DB_URL"}
				e.DataFrom, e.DataFromFind = 1, 1
			}),
			secrets: []*model.Secret{esoOwned(target("DB_URL", "x", "FOUND_1", "y", "FOUND_2", "z"))}},
		{name: "annotation on the target Secret declares the complete set; ES spec.data keys count as expected",
			es: withES(func(e *model.ExternalSecret) {
				e.DataKeys = []string{"DB_URL"}
				e.DataFrom, e.DataFromFind = 1, 1
			}),
			secrets: []*model.Secret{func() *model.Secret {
				s := esoOwned(target("DB_URL", "x", "API_KEY", "y", "parked", "z"))
				s.ExpectedKeys = []string{"API_KEY"}
				return s
			}()},
			want: []string{UnsafeUnexpectedKeys}},
		{name: "dataFrom.find with no declared key set is not judged (envFrom only)",
			es:      withES(func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = 1, 1 }),
			secrets: []*model.Secret{esoOwned(target("A", "x", "B", "y"))},
			pods: []*model.Pod{{ObjectMeta: migMeta("ns", "p"), Phase: "Running", Workload: model.Workload{Kind: "Pod", Name: "p"},
				Uses: []model.SecretUse{{Secret: "target", Via: model.ViaEnvFrom}}}}},
		{name: "dataFrom.extract is not judged",
			es: withES(func(e *model.ExternalSecret) {
				e.DataFrom = 1
				e.ExpectedKeys = []string{"A"}
			}),
			secrets: []*model.Secret{esoOwned(target("A", "x", "B", "y"))}},
		{name: "find behind a Replace template: only rendered keys land",
			es: withES(func(e *model.ExternalSecret) {
				e.DataFrom, e.DataFromFind = 1, 1
				e.HasTemplate, e.TemplateKeys = true, []string{"config.yaml"}
			}),
			secrets: []*model.Secret{esoOwned(target("config.yaml", "x", "stale", "y"))}},
		{name: "without Secrets only the spec rules run",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete"
				e.DataFromFind = 1
			}),
			secrets: []*model.Secret{target("zzz", "1")},
			avail:   migAvail(model.ResExternalSecrets),
			want:    []string{UnsafeDeleteWithMerge}},
		{name: "without ExternalSecrets nothing",
			es:    withES(func(e *model.ExternalSecret) { e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete" }),
			avail: migAvail(model.ResSecrets)},
		{name: "decode error: not judged",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete"
				e.DecodeErr = "decode: bad"
			})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := migWorld{secrets: c.secrets, es: []*model.ExternalSecret{c.es}, pods: c.pods}
			avail := c.avail
			if avail == nil {
				avail = migAvail()
			}
			var got []string
			w.store().Read(func(v model.View) {
				for _, u := range UnsafeExternalSecrets(v, avail) {
					if u.Namespace != "ns" || u.ExternalSecret != "es" {
						t.Errorf("unexpected object %+v", u)
					}
					got = append(got, u.Reason)
				}
			})
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestDuplicateCredentials(t *testing.T) {
	withType := func(s *model.Secret, typ string) *model.Secret { s.Type = typ; return s }
	renamed := func(s *model.Secret, ns, name string) *model.Secret { s.Namespace, s.Name = ns, name; return s }
	secrets := []*model.Secret{
		migSecret("a", "db", "user", "u", "password", "p"),
		migSecret("a", "db-check", "user", "u", "password", "p"),
		migSecret("a", "db-old", "user", "u", "password", "p"),
		migSecret("a", "db-other", "user", "u", "password", "q"), // one value differs
		migSecret("a", "db-subset", "user", "u"),                 // subset of keys
		migSecret("b", "db", "user", "u", "password", "p"),       // other namespace
		migSecret("a", "empty1"), migSecret("a", "empty2"),       // empty: skipped
		withType(migSecret("a", "tok1", "token", "t"), "kubernetes.io/service-account-token"),
		withType(migSecret("a", "tok2", "token", "t"), "kubernetes.io/service-account-token"),
		renamed(migSecret("", "", "k", "v"), "c", "seed"), // a declared compare pair: not reported
		renamed(migSecret("", "", "k", "v"), "c", "seed-check"),
		{ObjectMeta: migMeta("a", "nofp1"), Keys: model.NewKeySet(map[string]model.KeyInfo{"k": {Len: 1}})}, // unknown fingerprints
		{ObjectMeta: migMeta("a", "nofp2"), Keys: model.NewKeySet(map[string]model.KeyInfo{"k": {Len: 1}})},
	}
	migAnnotate(&secrets[10].ObjectMeta, model.AnnCompareWith, "seed-check")
	w := migWorld{secrets: secrets}
	var got []Duplicate
	w.store().Read(func(v model.View) { got = DuplicateCredentials(v, migAvail()) })
	want := []Duplicate{
		{Namespace: "a", Secret: "db-check", DuplicateOf: "db"},
		{Namespace: "a", Secret: "db-old", DuplicateOf: "db"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	w.store().Read(func(v model.View) { got = DuplicateCredentials(v, migAvail(model.ResPods)) })
	if got != nil {
		t.Fatalf("without Secrets: %+v", got)
	}
}

func TestLastAppliedDataSecrets(t *testing.T) {
	la := func(s *model.Secret, kind string, kv ...string) *model.Secret {
		s.LastApplied = &model.LastApplied{Kind: kind, DataFPs: model.FPList{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.LastApplied.DataKeys = append(s.LastApplied.DataKeys, kv[i])
			s.LastApplied.DataFPs.Set(kv[i], migFP.Sum([]byte(kv[i+1])))
		}
		return s
	}
	broken := migSecret("n", "broken", "k", "v")
	broken.LastApplied = &model.LastApplied{Kind: "Secret", DataKeys: []string{"k"}, Err: "last-applied: bad"}
	w := migWorld{secrets: []*model.Secret{
		la(migSecret("n", "same", "k", "v"), "Secret", "k", "v"),
		la(migSecret("n", "rotated", "k", "new", "j", "same"), "Secret", "k", "old", "j", "same"),
		la(migSecret("n", "removed", "j", "x"), "Secret", "k", "gone", "j", "x"),
		la(migSecret("n", "nodata", "k", "v"), "Secret"),                    // metadata-only manifest
		la(migSecret("n", "es-copy", "k", "v"), "ExternalSecret", "k", "v"), // ESO's copy of the ES manifest
		migSecret("n", "none", "k", "v"),
		broken,
	}}
	var got []LastAppliedData
	w.store().Read(func(v model.View) { got = LastAppliedDataSecrets(v, migAvail()) })
	want := []LastAppliedData{
		{Namespace: "n", Secret: "removed", Stale: true},
		{Namespace: "n", Secret: "rotated", Stale: true},
		{Namespace: "n", Secret: "same"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

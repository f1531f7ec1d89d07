package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func TestUnsafeExternalSecrets(t *testing.T) {
	withES := func(mod func(e *model.ExternalSecret)) *model.ExternalSecret {
		e := mt.ES("ns", "es", mt.ESTarget("target"))
		mod(e)
		return e
	}
	esoOwned := func(s *model.Secret) *model.Secret {
		return mt.WithManagers(mt.OwnedBy(s, model.OwnerRef{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "es", Controller: true}),
			mt.Write("externalsecrets.external-secrets.io/es", time.Time{}))
	}
	target := func(kv ...string) *model.Secret { return mt.SecretValues("ns", "target", kv...) }
	cases := []struct {
		name    string
		es      *model.ExternalSecret
		secrets []*model.Secret
		pods    []*model.Pod
		avail   model.Availability
		want    []string // reasons
	}{
		{name: "healthy owner", es: mt.ES("ns", "es", mt.ESTarget("target")), secrets: []*model.Secret{esoOwned(target("a", "1"))}},
		{name: "no target yet", es: mt.ES("ns", "es", mt.ESTarget("target"))},
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
			es: mt.ES("ns", "es", mt.ESTarget("target"), mt.ESManagers(mt.ApplyWrite("kubectl", time.Time{})))},
		{name: "owner over a Secret created earlier, not taken over yet",
			es: withES(func(e *model.ExternalSecret) { mt.Created(e, mt.T0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				mt.Created(s, mt.T0.Add(-time.Hour))
				return s
			}()},
			want: []string{UnsafeOwnerOverExisting}},
		{name: "owner over a Secret created earlier that ESO has taken over: legitimate now, cleared",
			es: withES(func(e *model.ExternalSecret) { mt.Created(e, mt.T0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := esoOwned(target("a", "1")) // ESO took it over: the ownerReference is there now
				mt.Created(s, mt.T0.Add(-time.Hour))
				s.Managers = append(s.Managers, mt.Write("kubectl-client-side-apply", time.Time{}))
				return s
			}()}},
		{name: "creationPolicy None: ESO writes nothing, no adoption rule applies",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy = "None", "Delete"
				mt.Created(e, mt.T0)
				e.DataFrom, e.DataFromFind = 1, 1
				e.ExpectedKeys = []string{"A"}
			}),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("A", "1", "B", "2")
				mt.Created(s, mt.T0.Add(-time.Hour))
				return s
			}()}},
		{name: "owner over a Secret with another writer's data and no ownerReference",
			es: mt.ES("ns", "es", mt.ESTarget("target")),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				s.Managers = []model.ManagedField{mt.Write("kubectl-client-side-apply", time.Time{})}
				return s
			}()},
			want: []string{UnsafeOwnerOverExisting}},
		{name: "ESO-created target, created after the ES",
			es: withES(func(e *model.ExternalSecret) { mt.Created(e, mt.T0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := esoOwned(target("a", "1"))
				mt.Created(s, mt.T0.Add(time.Second))
				return s
			}()}},
		{name: "merge over someone else's Secret is the point of Merge",
			es: withES(func(e *model.ExternalSecret) { e.CreationPolicy = "Merge"; mt.Created(e, mt.T0) }),
			secrets: []*model.Secret{func() *model.Secret {
				s := target("a", "1")
				mt.Created(s, mt.T0.Add(-time.Hour))
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
			pods:    []*model.Pod{mt.Pod("ns", "p", mt.Env("target", "A"), mt.Env("target", "B"))}},
		{name: "dataFrom.find read by envFrom plus one secretKeyRef: a lower bound, not a declared set",
			es:      withES(func(e *model.ExternalSecret) { e.DataFrom, e.DataFromFind = 1, 1 }),
			secrets: []*model.Secret{esoOwned(target("A", "x", "B", "y"))},
			pods:    []*model.Pod{mt.Pod("ns", "p", mt.EnvFrom("target"), mt.Env("target", "A"))}},
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
			pods:    []*model.Pod{mt.Pod("ns", "p", mt.EnvFrom("target"))}},
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
		{name: "find behind a Replace template, a declared set: still only rendered keys land",
			es: withES(func(e *model.ExternalSecret) {
				e.DataFrom, e.DataFromFind = 1, 1
				e.HasTemplate, e.TemplateKeys = true, []string{"config.yaml"}
				e.ExpectedKeys = []string{"config.yaml"}
			}),
			secrets: []*model.Secret{esoOwned(target("config.yaml", "x", "rendered-too", "y"))}},
		{name: "find behind a templateFrom literal (Replace): the find's keys are template inputs, not judged",
			es: withES(func(e *model.ExternalSecret) {
				e.DataFrom, e.DataFromFind = 1, 1
				e.HasTemplate, e.TemplateRendersData, e.TemplateOpen = true, true, model.TemplateOpenLiteral
				e.ExpectedKeys = []string{"DSN"}
			}),
			secrets: []*model.Secret{esoOwned(target("DSN", "x", "CACHE_URL", "y"))}},
		{name: "find behind a Merge template: the find's keys land, judged",
			es: withES(func(e *model.ExternalSecret) {
				e.DataFrom, e.DataFromFind = 1, 1
				e.HasTemplate, e.TemplateKeys, e.TemplateMergePolicy = true, []string{"config.yaml"}, "Merge"
				e.ExpectedKeys = []string{"config.yaml"}
			}),
			secrets: []*model.Secret{esoOwned(target("config.yaml", "x", "FOUND", "y"))},
			want:    []string{UnsafeUnexpectedKeys}},
		{name: "without Secrets only the spec rules run",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete"
				e.DataFromFind = 1
			}),
			secrets: []*model.Secret{target("zzz", "1")},
			avail:   mt.Only(model.ResExternalSecrets),
			want:    []string{UnsafeDeleteWithMerge}},
		{name: "without ExternalSecrets nothing",
			es:    withES(func(e *model.ExternalSecret) { e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete" }),
			avail: mt.Only(model.ResSecrets)},
		{name: "decode error: not judged",
			es: withES(func(e *model.ExternalSecret) {
				e.CreationPolicy, e.DeletionPolicy = "Merge", "Delete"
				e.DecodeErr = "decode: bad"
			})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mt.NewStore(t, c.secrets, c.es, c.pods)
			avail := c.avail
			if avail == nil {
				avail = mt.All()
			}
			var got []string
			w.Read(func(v model.View) {
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
	owned := func(s *model.Secret, kind, name string) *model.Secret {
		s.Owners = []model.OwnerRef{{APIVersion: "v1", Kind: kind, Name: name, UID: kind + "/" + name, Controller: true}}
		return s
	}
	renamed := func(s *model.Secret, ns, name string) *model.Secret { s.Namespace, s.Name = ns, name; return s }
	secrets := []*model.Secret{
		mt.SecretValues("a", "db", "user", "u", "password", "p"),
		mt.SecretValues("a", "db-check", "user", "u", "password", "p"),
		mt.SecretValues("a", "db-old", "user", "u", "password", "p"),
		mt.SecretValues("a", "db-other", "user", "u", "password", "q"), // one value differs
		mt.SecretValues("a", "db-subset", "user", "u"),                 // subset of keys
		mt.SecretValues("b", "db", "user", "u", "password", "p"),       // other namespace
		mt.SecretValues("a", "empty1"), mt.SecretValues("a", "empty2"), // empty: skipped
		mt.WithType(mt.SecretValues("a", "tok1", "token", "t"), "kubernetes.io/service-account-token"),
		mt.WithType(mt.SecretValues("a", "tok2", "token", "t"), "kubernetes.io/service-account-token"),
		renamed(mt.SecretValues("", "", "k", "v"), "c", "seed"), // a declared compare pair: not reported
		renamed(mt.SecretValues("", "", "k", "v"), "c", "seed-check"),
		mt.Secret("a", "nofp1", "k"), // unknown fingerprints
		mt.Secret("a", "nofp2", "k"),
		// prometheus-operator's generated web configs of two Prometheus objects: identical, each its owner's output.
		owned(mt.SecretValues("m", "prometheus-a-web-config", "web-config.yaml", "tls_server_config: {}"), "Prometheus", "a"),
		owned(mt.SecretValues("m", "prometheus-b-web-config", "web-config.yaml", "tls_server_config: {}"), "Prometheus", "b"),
		// A hand-made copy of an owned Secret is reported, as a duplicate of the owned one (first in order).
		mt.SecretValues("e", "api-copy", "token", "t1"),
		owned(mt.SecretValues("e", "api", "token", "t1"), "ExternalSecret", "api"),
		owned(mt.SecretValues("e", "api-b", "token", "t1"), "ExternalSecret", "api-b"),
	}
	mt.Annotate(secrets[10], model.AnnCompareWith, "seed-check")
	w := mt.NewStore(t, secrets)
	var got []Duplicate
	w.Read(func(v model.View) { got = DuplicateCredentials(v, mt.All()) })
	want := []Duplicate{
		{Namespace: "a", Secret: "db-check", DuplicateOf: "db"},
		{Namespace: "a", Secret: "db-old", DuplicateOf: "db"},
		{Namespace: "e", Secret: "api-copy", DuplicateOf: "api"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	w.Read(func(v model.View) { got = DuplicateCredentials(v, mt.Only(model.ResPods)) })
	if got != nil {
		t.Fatalf("without Secrets: %+v", got)
	}
}

func TestLastAppliedDataSecrets(t *testing.T) {
	la := func(s *model.Secret, kind string, kv ...string) *model.Secret {
		return mt.WithLastApplied(s, mt.LastAppliedData(kind, kv...))
	}
	broken := mt.SecretValues("n", "broken", "k", "v")
	broken.LastApplied = &model.LastApplied{Kind: "Secret", DataKeys: []string{"k"}, Err: "last-applied: bad"}
	w := mt.NewStore(t, []*model.Secret{
		la(mt.SecretValues("n", "same", "k", "v"), "Secret", "k", "v"),
		la(mt.SecretValues("n", "rotated", "k", "new", "j", "same"), "Secret", "k", "old", "j", "same"),
		la(mt.SecretValues("n", "removed", "j", "x"), "Secret", "k", "gone", "j", "x"),
		la(mt.SecretValues("n", "nodata", "k", "v"), "Secret"),                    // metadata-only manifest
		la(mt.SecretValues("n", "es-copy", "k", "v"), "ExternalSecret", "k", "v"), // ESO's copy of the ES manifest
		mt.SecretValues("n", "none", "k", "v"),
		broken,
	})
	var got []LastAppliedData
	w.Read(func(v model.View) { got = LastAppliedDataSecrets(v, mt.All()) })
	want := []LastAppliedData{
		{Namespace: "n", Secret: "removed", Stale: true},
		{Namespace: "n", Secret: "rotated", Stale: true},
		{Namespace: "n", Secret: "same"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

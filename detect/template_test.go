package detect

import (
	"reflect"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

// ESO (v0.20.4, externalsecret_controller_template.go) writes spec.data keys only
// when the template renders nothing or mergePolicy is Merge.
func TestWrittenKeysTemplateSemantics(t *testing.T) {
	cases := []struct {
		name string
		es   model.ExternalSecret
		want []string
	}{
		{"no template", model.ExternalSecret{ESWrites: model.ESWrites{DataKeys: []string{"a", "b"}}}, []string{"a", "b"}},
		{"template without data", model.ExternalSecret{ESWrites: model.ESWrites{DataKeys: []string{"a"}, HasTemplate: true}}, []string{"a"}},
		{"template data, Replace", model.ExternalSecret{ESWrites: model.ESWrites{DataKeys: []string{"a"}, HasTemplate: true, TemplateRendersData: true, TemplateKeys: []string{"dsn"}}}, []string{"dsn"}},
		{"template data, Merge", model.ExternalSecret{ESWrites: model.ESWrites{DataKeys: []string{"a"}, HasTemplate: true, TemplateRendersData: true, TemplateKeys: []string{"dsn"}, TemplateMergePolicy: "Merge"}}, []string{"a", "dsn"}},
		{"templateFrom with unknowable keys, Replace", model.ExternalSecret{ESWrites: model.ESWrites{DataKeys: []string{"a"}, HasTemplate: true, TemplateRendersData: true}}, nil},
	}
	for _, c := range cases {
		got := c.es.WrittenKeys()
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v want %v", c.name, got, c.want)
		}
	}
}

// During a rollout the replicas of one Deployment may read different keys of a
// Secret that does not exist: the absent finding counts every pod.
func TestAbsentSecretCountsEveryPod(t *testing.T) {
	s := mt.NewStore(t)
	for i, key := range []string{"A", "A", "B", "B"} {
		s.UpsertPod(mt.WithWorkload(mt.Pod("ns", "api-"+string(rune('a'+i)), mt.Env("gone", key)), "Deployment", "api"))
	}
	res := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.Only(model.ResSecrets, model.ResPods)) })
	if len(res.Absent) != 1 || !reflect.DeepEqual(res.Absent[0].Consumers, []Consumer{{Kind: "Deployment", Name: "api", Pods: 4}}) {
		t.Fatalf("absent: %+v", res.Absent)
	}
}

// ESO refreshes on the interval only with refreshPolicy Periodic (the default).
func TestOverdueOnlyForPeriodicRefresh(t *testing.T) {
	now := time.Unix(100000, 0)
	s := mt.NewStore(t)
	for _, pol := range []string{"", "Periodic", "CreatedOnce", "OnChange"} {
		s.UpsertExternalSecret(mt.ES("ns", "es-"+pol, mt.ESRefreshPolicy(pol), mt.ESRefreshed(now.Add(-10*time.Hour), time.Hour, true)), time.Time{})
	}
	var overdue []string
	s.Read(func(v model.View) {
		for _, a := range SyncHealth(v, mt.Only(model.ResExternalSecrets), now, 3).Ages {
			if a.Overdue {
				overdue = append(overdue, a.ExternalSecret)
			}
		}
	})
	if !reflect.DeepEqual(overdue, []string{"es-", "es-Periodic"}) {
		t.Fatalf("overdue: %v", overdue)
	}
}

package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func wantExp(ns, sec, key string, src Source, optional bool, c ...Consumer) Expectation {
	return Expectation{Namespace: ns, Secret: sec, Key: key, Source: src, Optional: optional, Consumers: c}
}

func TestExpectations(t *testing.T) {
	const ns = "app"
	replicas := func(n int, uses ...model.SecretUse) []*model.Pod {
		var ps []*model.Pod
		for i := 0; i < n; i++ {
			ps = append(ps, mt.DeployPod(ns, "web", i, uses...))
		}
		return ps
	}
	tests := []struct {
		name  string
		objs  []any
		avail model.Availability
		want  []Expectation
	}{
		{
			name: "env secretKeyRef, optional and not",
			objs: []any{mt.Pod(ns, "p", mt.Env("db", "USER"), mt.OptEnv("db", "PASS"))},
			want: []Expectation{
				wantExp(ns, "db", "PASS", SourcePod, true, barePod("p")),
				wantExp(ns, "db", "USER", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "envFrom non-optional expects existence, optional expects nothing",
			objs: []any{mt.Pod(ns, "p", mt.EnvFrom("cfg"), mt.OptEnvFrom("extra"))},
			want: []Expectation{wantExp(ns, "cfg", "", SourcePod, false, barePod("p"))},
		},
		{
			name: "secret volume items and projected sources",
			objs: []any{mt.Pod(ns, "p", mt.VolItem("tls", "tls.crt"), mt.VolItem("tls", "tls.key"), mt.ProjItem("bundle", "ca.crt"),
				model.SecretUse{Secret: "whole", Via: model.ViaVolume, Container: "app"})},
			want: []Expectation{
				wantExp(ns, "bundle", "ca.crt", SourcePod, false, barePod("p")),
				wantExp(ns, "tls", "tls.crt", SourcePod, false, barePod("p")),
				wantExp(ns, "tls", "tls.key", SourcePod, false, barePod("p")),
				wantExp(ns, "whole", "", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "optional volume without items expects nothing, with items keeps Optional",
			objs: []any{mt.Pod(ns, "p",
				model.SecretUse{Secret: "maybe", Via: model.ViaVolume, Optional: true},
				model.SecretUse{Secret: "maybe2", Key: "K", Via: model.ViaProjected, Optional: true})},
			want: []Expectation{wantExp(ns, "maybe2", "K", SourcePod, true, barePod("p"))},
		},
		{
			name: "init and ephemeral container uses",
			objs: []any{mt.Pod(ns, "p", mt.InContainer(mt.Env("migr", "DSN"), "init-db"), mt.InContainer(mt.EnvFrom("debug"), "debugger-x1"))},
			want: []Expectation{
				wantExp(ns, "debug", "", SourcePod, false, barePod("p")),
				wantExp(ns, "migr", "DSN", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "a pod counts once per expectation even when several containers use the key",
			objs: []any{mt.Pod(ns, "p", mt.Env("db", "USER"), mt.InContainer(mt.Env("db", "USER"), "sidecar"), mt.VolItem("db", "USER"))},
			want: []Expectation{wantExp(ns, "db", "USER", SourcePod, false, barePod("p"))},
		},
		{
			name: "optional in one pod, required in another: required wins",
			objs: []any{mt.Pod(ns, "a", mt.OptEnv("db", "K")), mt.Pod(ns, "b", mt.Env("db", "K"))},
			want: []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("a"), barePod("b"))},
		},
		{
			name: "optional and required use of one key in the same pod: required wins",
			objs: []any{mt.Pod(ns, "p", mt.InContainer(mt.OptEnv("db", "K"), "init"), mt.Env("db", "K"))},
			want: []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("p"))},
		},
		{
			name: "Succeeded and Failed pods are ignored, Pending counts",
			objs: []any{
				mt.WithPhase(mt.Pod(ns, "done", mt.Env("db", "A")), "Succeeded"),
				mt.WithPhase(mt.Pod(ns, "dead", mt.Env("db", "B")), "Failed"),
				mt.WithPhase(mt.Pod(ns, "wait", mt.Env("db", "C")), "Pending"),
			},
			want: []Expectation{wantExp(ns, "db", "C", SourcePod, false, barePod("wait"))},
		},
		{
			name: "30 replicas of a Deployment are one consumer with Pods 30",
			objs: []any{replicas(30, mt.Env("db", "PASS"), mt.EnvFrom("cfg"))},
			want: []Expectation{
				wantExp(ns, "cfg", "", SourcePod, false, byDeploy("web", 30)),
				wantExp(ns, "db", "PASS", SourcePod, false, byDeploy("web", 30)),
			},
		},
		{
			name: "same Secret name in two namespaces stays apart",
			objs: []any{mt.Pod("a", "p", mt.Env("db", "K")), mt.Pod("b", "p", mt.Env("db", "K"))},
			want: []Expectation{
				wantExp("a", "db", "K", SourcePod, false, barePod("p")),
				wantExp("b", "db", "K", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "ExternalSecret spec.data keys in its target (defaulted and explicit)",
			objs: []any{mt.ES(ns, "db", mt.ESData("USER", "PASS")), mt.ES(ns, "api", mt.ESTarget("api-creds"), mt.ESData("TOKEN"))},
			want: []Expectation{
				wantExp(ns, "api-creds", "TOKEN", SourceExternalSecret, false, byES("api")),
				wantExp(ns, "db", "PASS", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "USER", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name: "template.data with default mergePolicy: only template keys",
			objs: []any{mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("", "DSN"))},
			want: []Expectation{wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "template.data with mergePolicy Replace: only template keys",
			objs: []any{mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("Replace", "DSN"))},
			want: []Expectation{wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "template.data with mergePolicy Merge: data and template keys",
			objs: []any{mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("Merge", "DSN"))},
			want: []Expectation{
				wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "pass", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "user", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name: "template without data keys keeps spec.data keys",
			objs: []any{mt.ES(ns, "db", mt.ESData("user"), mt.ESTemplate(""))},
			want: []Expectation{wantExp(ns, "db", "user", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "dataFrom only: the Secret must exist, no keys",
			objs: []any{mt.ES(ns, "bulk", mt.ESDataFrom(1, 1))},
			want: []Expectation{wantExp(ns, "bulk", "", SourceExternalSecret, false, byES("bulk"))},
		},
		{
			name: "ExternalSecret without a Ready condition yet, or undecodable: nothing",
			objs: []any{mt.ES(ns, "new", mt.ESData("A"), mt.ESReady("", ""), mt.ESExpectKeys("B")), mt.ES(ns, "bad", mt.ESData("A"), mt.ESDecodeErr("decode: x"))},
			want: nil,
		},
		{
			name: "Ready=False still states its keys",
			objs: []any{mt.ES(ns, "db", mt.ESData("A"), mt.ESReady("False", "SecretSyncedError"))},
			want: []Expectation{wantExp(ns, "db", "A", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "v1beta1 ExternalSecret behaves like v1",
			objs: []any{mt.ES(ns, "old", mt.ESAPIVersion("external-secrets.io/v1beta1"), mt.ESData("A"), mt.ESTemplate("Merge", "B"))},
			want: []Expectation{
				wantExp(ns, "old", "A", SourceExternalSecret, false, byES("old")),
				wantExp(ns, "old", "B", SourceExternalSecret, false, byES("old")),
			},
		},
		{
			name: "two ExternalSecrets writing one Secret (Merge)",
			objs: []any{mt.ES(ns, "a", mt.ESTarget("shared"), mt.ESData("K")), mt.ES(ns, "b", mt.ESTarget("shared"), mt.ESCreation("Merge"), mt.ESData("K", "L"))},
			want: []Expectation{
				wantExp(ns, "shared", "K", SourceExternalSecret, false, byES("a"), byES("b")),
				wantExp(ns, "shared", "L", SourceExternalSecret, false, byES("b")),
			},
		},
		{
			name: "annotation on a Secret and on an ExternalSecret (for its target)",
			objs: []any{
				mt.ExpectKeys(mt.Secret(ns, "plain", "A"), "A", "B"),
				mt.ES(ns, "ext", mt.ESTarget("ext-target"), mt.ESData("X"), mt.ESExpectKeys("X", "Y")),
			},
			want: []Expectation{
				wantExp(ns, "ext-target", "X", SourceAnnotation, false, byES("ext")),
				wantExp(ns, "ext-target", "Y", SourceAnnotation, false, byES("ext")),
				wantExp(ns, "ext-target", "X", SourceExternalSecret, false, byES("ext")),
				wantExp(ns, "plain", "A", SourceAnnotation, false, bySecret("plain")),
				wantExp(ns, "plain", "B", SourceAnnotation, false, bySecret("plain")),
			},
		},
		{
			name: "Helm: rendered Secret (data+stringData keys) and ExternalSecret target",
			objs: []any{mt.HelmRelease(ns, "shop", 3, "deployed",
				mt.HelmSecret(ns, "shop-env", "FROM_DATA", "FROM_STRINGDATA"),
				mt.HelmES("", "shop-es", "shop-runtime", "API_KEY"),
				mt.HelmES("other", "legacy", "legacy"))},
			want: []Expectation{
				wantExp(ns, "shop-env", "FROM_DATA", SourceHelm, false, byRelease("shop")),
				wantExp(ns, "shop-env", "FROM_STRINGDATA", SourceHelm, false, byRelease("shop")),
				wantExp(ns, "shop-runtime", "API_KEY", SourceHelm, false, byRelease("shop")),
				wantExp("other", "legacy", "", SourceHelm, false, byRelease("shop")),
			},
		},
		{
			name: "Helm: only the highest deployed revision counts",
			objs: []any{
				mt.HelmRelease(ns, "shop", 1, "superseded", mt.HelmSecret(ns, "s", "V1")),
				mt.HelmRelease(ns, "shop", 2, "deployed", mt.HelmSecret(ns, "s", "V2")),
				mt.HelmRelease(ns, "shop", 3, "deployed", mt.HelmSecret(ns, "s", "V3")),
				mt.HelmRelease(ns, "shop", 4, "failed", mt.HelmSecret(ns, "s", "V4")),
				mt.HelmRelease(ns, "shop", 5, "pending-upgrade", mt.HelmSecret(ns, "s", "V5")),
				mt.HelmRelease("other", "shop", 1, "deployed", mt.HelmSecret("other", "s", "O1")),
			},
			want: []Expectation{
				wantExp(ns, "s", "V3", SourceHelm, false, byRelease("shop")),
				wantExp("other", "s", "O1", SourceHelm, false, byRelease("shop")),
			},
		},
		{
			name: "Helm: a corrupt payload contributes nothing",
			objs: []any{func() *model.HelmRelease {
				h := mt.HelmRelease(ns, "broken", 2, "deployed")
				h.DecodeErr = "release: gzip: invalid header"
				return h
			}()},
			want: nil,
		},
		{
			name:  "pods unavailable: pod source dropped, others remain",
			objs:  []any{mt.Pod(ns, "p", mt.Env("db", "K")), mt.ES(ns, "db", mt.ESData("A"))},
			avail: mt.AllBut(model.ResPods),
			want:  []Expectation{wantExp(ns, "db", "A", SourceExternalSecret, false, byES("db"))},
		},
		{
			name:  "ExternalSecrets and Helm unavailable: their sources dropped",
			objs:  []any{mt.Pod(ns, "p", mt.Env("db", "K")), mt.ES(ns, "db", mt.ESData("A")), mt.HelmRelease(ns, "r", 1, "deployed", mt.HelmSecret(ns, "db", "H"))},
			avail: mt.AllBut(model.ResExternalSecrets, model.ResHelmReleases),
			want:  []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("p"))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = mt.All()
			}
			s := mt.NewStore(t, tc.objs...)
			got := mt.Read(s, func(v model.View) []Expectation { return Expectations(v, avail) })
			checkSlice(t, "Expectations", got, tc.want)
		})
	}
}

func TestWrittenKeys(t *testing.T) {
	tests := []struct {
		name string
		e    *model.ExternalSecret
		want []string
	}{
		{"data only", mt.ES("n", "e", mt.ESData("B", "A")), []string{"A", "B"}},
		{"template default policy", mt.ES("n", "e", mt.ESData("a"), mt.ESTemplate("", "X", "Y")), []string{"X", "Y"}},
		{"template Merge", mt.ES("n", "e", mt.ESData("a"), mt.ESTemplate("Merge", "X")), []string{"X", "a"}},
		{"template Merge overlapping", mt.ES("n", "e", mt.ESData("X", "a"), mt.ESTemplate("Merge", "X")), []string{"X", "a"}},
		{"template without data", mt.ES("n", "e", mt.ESData("a"), mt.ESTemplate("")), []string{"a"}},
		{"dataFrom only", mt.ES("n", "e", mt.ESDataFrom(2, 0)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.WrittenKeys()
			if !sameSlice(got, tc.want) {
				t.Errorf("WrittenKeys = %q, want %q", got, tc.want)
			}
		})
	}
	// The result must not alias the record (records are shared and immutable).
	e := mt.ES("n", "e", mt.ESTemplate("", "X", "Y"))
	got := e.WrittenKeys()
	got[0] = "mutated"
	if !reflect.DeepEqual(e.TemplateKeys, []string{"X", "Y"}) {
		t.Errorf("WrittenKeys aliased the record: TemplateKeys = %q", e.TemplateKeys)
	}
}

func TestPodActive(t *testing.T) {
	for phase, want := range map[string]bool{"Running": true, "Pending": true, "Unknown": true, "": true,
		"Succeeded": false, "Failed": false} {
		if got := PodActive(mt.WithPhase(mt.Pod("n", "p"), phase)); got != want {
			t.Errorf("PodActive(phase %q) = %v, want %v", phase, got, want)
		}
	}
}

package detect

import (
	"reflect"
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
)

func wantExp(ns, sec, key string, src Source, optional bool, c ...Consumer) Expectation {
	return Expectation{Namespace: ns, Secret: sec, Key: key, Source: src, Optional: optional, Consumers: c}
}

func TestExpectations(t *testing.T) {
	const ns = "app"
	replicas := func(n int, uses ...model.SecretUse) []*model.Pod {
		var ps []*model.Pod
		for i := 0; i < n; i++ {
			ps = append(ps, deployPod(ns, "web", i, uses...))
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
			objs: []any{pod(ns, "p", useEnv("db", "USER"), optEnv("db", "PASS"))},
			want: []Expectation{
				wantExp(ns, "db", "PASS", SourcePod, true, barePod("p")),
				wantExp(ns, "db", "USER", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "envFrom non-optional expects existence, optional expects nothing",
			objs: []any{pod(ns, "p", envFrom("cfg"), optEnvFrom("extra"))},
			want: []Expectation{wantExp(ns, "cfg", "", SourcePod, false, barePod("p"))},
		},
		{
			name: "secret volume items and projected sources",
			objs: []any{pod(ns, "p", volItem("tls", "tls.crt"), volItem("tls", "tls.key"), projItem("bundle", "ca.crt"),
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
			objs: []any{pod(ns, "p",
				model.SecretUse{Secret: "maybe", Via: model.ViaVolume, Optional: true},
				model.SecretUse{Secret: "maybe2", Key: "K", Via: model.ViaProjected, Optional: true})},
			want: []Expectation{wantExp(ns, "maybe2", "K", SourcePod, true, barePod("p"))},
		},
		{
			name: "init and ephemeral container uses",
			objs: []any{pod(ns, "p", inContainer(useEnv("migr", "DSN"), "init-db"), inContainer(envFrom("debug"), "debugger-x1"))},
			want: []Expectation{
				wantExp(ns, "debug", "", SourcePod, false, barePod("p")),
				wantExp(ns, "migr", "DSN", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "a pod counts once per expectation even when several containers use the key",
			objs: []any{pod(ns, "p", useEnv("db", "USER"), inContainer(useEnv("db", "USER"), "sidecar"), volItem("db", "USER"))},
			want: []Expectation{wantExp(ns, "db", "USER", SourcePod, false, barePod("p"))},
		},
		{
			name: "optional in one pod, required in another: required wins",
			objs: []any{pod(ns, "a", optEnv("db", "K")), pod(ns, "b", useEnv("db", "K"))},
			want: []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("a"), barePod("b"))},
		},
		{
			name: "optional and required use of one key in the same pod: required wins",
			objs: []any{pod(ns, "p", inContainer(optEnv("db", "K"), "init"), useEnv("db", "K"))},
			want: []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("p"))},
		},
		{
			name: "Succeeded and Failed pods are ignored, Pending counts",
			objs: []any{
				withPhase(pod(ns, "done", useEnv("db", "A")), "Succeeded"),
				withPhase(pod(ns, "dead", useEnv("db", "B")), "Failed"),
				withPhase(pod(ns, "wait", useEnv("db", "C")), "Pending"),
			},
			want: []Expectation{wantExp(ns, "db", "C", SourcePod, false, barePod("wait"))},
		},
		{
			name: "30 replicas of a Deployment are one consumer with Pods 30",
			objs: []any{replicas(30, useEnv("db", "PASS"), envFrom("cfg"))},
			want: []Expectation{
				wantExp(ns, "cfg", "", SourcePod, false, byDeploy("web", 30)),
				wantExp(ns, "db", "PASS", SourcePod, false, byDeploy("web", 30)),
			},
		},
		{
			name: "same Secret name in two namespaces stays apart",
			objs: []any{pod("a", "p", useEnv("db", "K")), pod("b", "p", useEnv("db", "K"))},
			want: []Expectation{
				wantExp("a", "db", "K", SourcePod, false, barePod("p")),
				wantExp("b", "db", "K", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "ExternalSecret spec.data keys in its target (defaulted and explicit)",
			objs: []any{es(ns, "db", esData("USER", "PASS")), es(ns, "api", esTarget("api-creds"), esData("TOKEN"))},
			want: []Expectation{
				wantExp(ns, "api-creds", "TOKEN", SourceExternalSecret, false, byES("api")),
				wantExp(ns, "db", "PASS", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "USER", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name: "template.data with default mergePolicy: only template keys",
			objs: []any{es(ns, "db", esData("user", "pass"), esTemplate("", "DSN"))},
			want: []Expectation{wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "template.data with mergePolicy Replace: only template keys",
			objs: []any{es(ns, "db", esData("user", "pass"), esTemplate("Replace", "DSN"))},
			want: []Expectation{wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "template.data with mergePolicy Merge: data and template keys",
			objs: []any{es(ns, "db", esData("user", "pass"), esTemplate("Merge", "DSN"))},
			want: []Expectation{
				wantExp(ns, "db", "DSN", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "pass", SourceExternalSecret, false, byES("db")),
				wantExp(ns, "db", "user", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name: "template without data keys keeps spec.data keys",
			objs: []any{es(ns, "db", esData("user"), esTemplate(""))},
			want: []Expectation{wantExp(ns, "db", "user", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "dataFrom only: the Secret must exist, no keys",
			objs: []any{es(ns, "bulk", esDataFrom(1, 1))},
			want: []Expectation{wantExp(ns, "bulk", "", SourceExternalSecret, false, byES("bulk"))},
		},
		{
			name: "ExternalSecret without a Ready condition yet, or undecodable: nothing",
			objs: []any{es(ns, "new", esData("A"), esReady("", ""), esAnnotated("B")), es(ns, "bad", esData("A"), esDecodeErr("decode: x"))},
			want: nil,
		},
		{
			name: "Ready=False still states its keys",
			objs: []any{es(ns, "db", esData("A"), esReady("False", "SecretSyncedError"))},
			want: []Expectation{wantExp(ns, "db", "A", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "v1beta1 ExternalSecret behaves like v1",
			objs: []any{es(ns, "old", esAPIVersion("external-secrets.io/v1beta1"), esData("A"), esTemplate("Merge", "B"))},
			want: []Expectation{
				wantExp(ns, "old", "A", SourceExternalSecret, false, byES("old")),
				wantExp(ns, "old", "B", SourceExternalSecret, false, byES("old")),
			},
		},
		{
			name: "two ExternalSecrets writing one Secret (Merge)",
			objs: []any{es(ns, "a", esTarget("shared"), esData("K")), es(ns, "b", esTarget("shared"), esCreation("Merge"), esData("K", "L"))},
			want: []Expectation{
				wantExp(ns, "shared", "K", SourceExternalSecret, false, byES("a"), byES("b")),
				wantExp(ns, "shared", "L", SourceExternalSecret, false, byES("b")),
			},
		},
		{
			name: "annotation on a Secret and on an ExternalSecret (for its target)",
			objs: []any{
				annotated(secret(ns, "plain", "A"), "A", "B"),
				es(ns, "ext", esTarget("ext-target"), esData("X"), esAnnotated("X", "Y")),
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
			objs: []any{release(ns, "shop", 3, "deployed",
				helmSecret(ns, "shop-env", "FROM_DATA", "FROM_STRINGDATA"),
				helmES("", "shop-es", "shop-runtime", "API_KEY"),
				helmES("other", "legacy", "legacy"))},
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
				release(ns, "shop", 1, "superseded", helmSecret(ns, "s", "V1")),
				release(ns, "shop", 2, "deployed", helmSecret(ns, "s", "V2")),
				release(ns, "shop", 3, "deployed", helmSecret(ns, "s", "V3")),
				release(ns, "shop", 4, "failed", helmSecret(ns, "s", "V4")),
				release(ns, "shop", 5, "pending-upgrade", helmSecret(ns, "s", "V5")),
				release("other", "shop", 1, "deployed", helmSecret("other", "s", "O1")),
			},
			want: []Expectation{
				wantExp(ns, "s", "V3", SourceHelm, false, byRelease("shop")),
				wantExp("other", "s", "O1", SourceHelm, false, byRelease("shop")),
			},
		},
		{
			name: "Helm: a corrupt payload contributes nothing",
			objs: []any{func() *model.HelmRelease {
				h := release(ns, "broken", 2, "deployed")
				h.DecodeErr = "release: gzip: invalid header"
				return h
			}()},
			want: nil,
		},
		{
			name:  "pods unavailable: pod source dropped, others remain",
			objs:  []any{pod(ns, "p", useEnv("db", "K")), es(ns, "db", esData("A"))},
			avail: allBut(model.ResPods),
			want:  []Expectation{wantExp(ns, "db", "A", SourceExternalSecret, false, byES("db"))},
		},
		{
			name:  "ExternalSecrets and Helm unavailable: their sources dropped",
			objs:  []any{pod(ns, "p", useEnv("db", "K")), es(ns, "db", esData("A")), release(ns, "r", 1, "deployed", helmSecret(ns, "db", "H"))},
			avail: allBut(model.ResExternalSecrets, model.ResHelmReleases),
			want:  []Expectation{wantExp(ns, "db", "K", SourcePod, false, barePod("p"))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = availAll()
			}
			s := newStore(t, tc.objs...)
			got := readView(s, func(v model.View) []Expectation { return Expectations(v, avail) })
			checkSlice(t, "Expectations", got, tc.want)
		})
	}
}

func TestESExpectedKeys(t *testing.T) {
	tests := []struct {
		name string
		e    *model.ExternalSecret
		want []string
	}{
		{"data only", es("n", "e", esData("B", "A")), []string{"A", "B"}},
		{"template default policy", es("n", "e", esData("a"), esTemplate("", "X", "Y")), []string{"X", "Y"}},
		{"template Merge", es("n", "e", esData("a"), esTemplate("Merge", "X")), []string{"X", "a"}},
		{"template Merge overlapping", es("n", "e", esData("X", "a"), esTemplate("Merge", "X")), []string{"X", "a"}},
		{"template without data", es("n", "e", esData("a"), esTemplate("")), []string{"a"}},
		{"dataFrom only", es("n", "e", esDataFrom(2, 0)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ESExpectedKeys(tc.e)
			if !sameSlice(got, tc.want) {
				t.Errorf("ESExpectedKeys = %q, want %q", got, tc.want)
			}
		})
	}
	// The result must not alias the record (records are shared and immutable).
	e := es("n", "e", esTemplate("", "X", "Y"))
	got := ESExpectedKeys(e)
	got[0] = "mutated"
	if !reflect.DeepEqual(e.TemplateKeys, []string{"X", "Y"}) {
		t.Errorf("ESExpectedKeys aliased the record: TemplateKeys = %q", e.TemplateKeys)
	}
}

func TestPodActive(t *testing.T) {
	for phase, want := range map[string]bool{"Running": true, "Pending": true, "Unknown": true, "": true,
		"Succeeded": false, "Failed": false} {
		if got := PodActive(withPhase(pod("n", "p"), phase)); got != want {
			t.Errorf("PodActive(phase %q) = %v, want %v", phase, got, want)
		}
	}
}

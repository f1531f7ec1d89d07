package detect

import (
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/model"
	mt "github.com/driftwatch/driftwatch/internal/model/modeltest"
)

func wantMissing(ns, sec, key string, src Source, optional bool, c ...Consumer) MissingKey {
	return MissingKey{Namespace: ns, Secret: sec, Key: key, Source: src, Optional: optional, Consumers: c}
}

func wantAbsent(ns, sec string, src Source, c ...Consumer) AbsentSecret {
	return AbsentSecret{Namespace: ns, Secret: sec, Source: src, Consumers: c}
}

func checkMissingKeys(t *testing.T, got, want MissingKeysResult) {
	t.Helper()
	checkSlice(t, "Missing", got.Missing, want.Missing)
	checkSlice(t, "Absent", got.Absent, want.Absent)
}

func TestMissingKeys(t *testing.T) {
	const ns = "app"
	replicas := func(deployName string, n int, uses ...model.SecretUse) []*model.Pod {
		var ps []*model.Pod
		for i := 0; i < n; i++ {
			ps = append(ps, mt.DeployPod(ns, deployName, i, uses...))
		}
		return ps
	}
	corrupt := mt.HelmRelease(ns, "broken", 7, "deployed")
	corrupt.DecodeErr = "release: base64: illegal data at input byte 4"

	tests := []struct {
		name    string
		objs    []any
		avail   model.Availability
		missing []MissingKey
		absent  []AbsentSecret
	}{
		{
			name: "healthy objects yield nothing",
			objs: []any{
				mt.Secret(ns, "db", "USER", "PASS"), mt.Secret(ns, "tls", "tls.crt", "tls.key"),
				mt.Pod(ns, "p", mt.Env("db", "USER"), mt.OptEnv("db", "PASS"), mt.EnvFrom("db"), mt.VolItem("tls", "tls.crt"), mt.ProjItem("tls", "tls.key")),
				mt.ES(ns, "db", mt.ESData("USER", "PASS")), mt.ES(ns, "bulk", mt.ESTarget("db"), mt.ESDataFrom(1, 1)),
				mt.HelmRelease(ns, "r", 1, "deployed", mt.HelmSecret(ns, "tls", "tls.crt")),
				mt.ExpectKeys(mt.Secret(ns, "ann", "A"), "A"),
			},
		},
		{
			name:    "optional secretKeyRef: the silent kind, reported with Optional",
			objs:    []any{mt.Secret(ns, "db", "USER"), mt.Pod(ns, "p", mt.Env("db", "USER"), mt.OptEnv("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, true, barePod("p"))},
		},
		{
			name:    "non-optional secretKeyRef",
			objs:    []any{mt.Secret(ns, "db", "USER"), mt.Pod(ns, "p", mt.Env("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, barePod("p"))},
		},
		{
			name:   "envFrom non-optional: absent when the Secret is missing",
			objs:   []any{mt.Pod(ns, "p", mt.EnvFrom("cfg"))},
			absent: []AbsentSecret{wantAbsent(ns, "cfg", SourcePod, barePod("p"))},
		},
		{
			// The kubelet reads imagePullSecrets to pull images: a missing
			// one fails loudly there (ErrImagePull, an event naming it).
			name: "imagePullSecrets are readers, never expectations: absent or empty, nothing",
			objs: []any{mt.Pod(ns, "p", mt.ImagePull("regcred")), mt.Secret(ns, "empty"),
				mt.DeployPod(ns, "web", 0, mt.ImagePull("empty"), mt.ImagePull("regcred"))},
		},
		{
			name:   "a pod pulling with a Secret it also reads: absent through the read, the pull adds nothing",
			objs:   []any{mt.Pod(ns, "both", mt.ImagePull("cfg"), mt.EnvFrom("cfg")), mt.Pod(ns, "pull", mt.ImagePull("cfg"))},
			absent: []AbsentSecret{wantAbsent(ns, "cfg", SourcePod, barePod("both"))},
		},
		{
			name: "envFrom optional: no finding when the Secret is missing",
			objs: []any{mt.Pod(ns, "p", mt.OptEnvFrom("cfg"))},
		},
		{
			// Argo CD v2.14 install.yaml: argocd-dex-server-tls and
			// argocd-repo-server-tls are optional secret volumes with items,
			// absent in a default install. A feature switched off, not a finding.
			name: "absent Secret referenced only optionally (volume items, secretKeyRef): nothing",
			objs: []any{mt.Pod(ns, "p", mt.OptVolItem("dex-tls", "tls.crt"), mt.OptVolItem("dex-tls", "ca.crt"), mt.OptEnv("feature", "TOKEN")),
				mt.DeployPod(ns, "web", 0, mt.OptEnv("feature", "TOKEN"))},
		},
		{
			name:   "absent Secret referenced optionally by one pod and required by another: absent, the required reader counts",
			objs:   []any{mt.Pod(ns, "opt", mt.OptEnv("db", "A")), mt.Pod(ns, "req", mt.Env("db", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, barePod("req"))},
		},
		{
			name:    "optional secretKeyRef to a missing key of an existing Secret stays a finding, marked optional",
			objs:    []any{mt.Secret(ns, "db", "A"), mt.Pod(ns, "p", mt.OptVolItem("db", "ca.crt"))},
			missing: []MissingKey{wantMissing(ns, "db", "ca.crt", SourcePod, true, barePod("p"))},
		},
		{
			// ESO v0.20.4: creationPolicy None creates and updates nothing and
			// reports Ready=True SecretSynced.
			name: "ExternalSecret with creationPolicy None expects nothing of its target",
			objs: []any{mt.ES(ns, "none", mt.ESCreation("None"), mt.ESTarget("ext"), mt.ESData("A")),
				mt.ES(ns, "none2", mt.ESCreation("None"), mt.ESTarget("short"), mt.ESData("A", "B")), mt.Secret(ns, "short", "A")},
		},
		{
			name:    "creationPolicy None keeps the expected-keys annotation: the user's own declaration",
			objs:    []any{mt.Secret(ns, "short", "A"), mt.ES(ns, "none", mt.ESCreation("None"), mt.ESTarget("short"), mt.ESData("A"), mt.ESExpectKeys("A", "B"))},
			missing: []MissingKey{wantMissing(ns, "short", "B", SourceAnnotation, false, byES("none"))},
		},
		{
			name: "envFrom of an existing but empty Secret names no key",
			objs: []any{mt.Secret(ns, "cfg"), mt.Pod(ns, "p", mt.EnvFrom("cfg"))},
		},
		{
			name:    "secret volume items and projected sources",
			objs:    []any{mt.Secret(ns, "tls", "tls.crt"), mt.Secret(ns, "bundle"), mt.Pod(ns, "p", mt.VolItem("tls", "tls.key"), mt.VolItem("tls", "tls.crt"), mt.ProjItem("bundle", "ca.crt"))},
			missing: []MissingKey{wantMissing(ns, "bundle", "ca.crt", SourcePod, false, barePod("p")), wantMissing(ns, "tls", "tls.key", SourcePod, false, barePod("p"))},
		},
		{
			name: "init and ephemeral containers",
			objs: []any{mt.Secret(ns, "db", "A"), mt.Pod(ns, "p",
				mt.InContainer(mt.Env("db", "INIT_KEY"), "init-migrate"), mt.InContainer(mt.Env("db", "EPH_KEY"), "debugger-abc"))},
			missing: []MissingKey{
				wantMissing(ns, "db", "EPH_KEY", SourcePod, false, barePod("p")),
				wantMissing(ns, "db", "INIT_KEY", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "pods in phase Succeeded or Failed are ignored",
			objs: []any{mt.Secret(ns, "db", "A"),
				mt.WithPhase(mt.Pod(ns, "job-1", mt.Env("db", "GONE")), "Succeeded"),
				mt.WithPhase(mt.Pod(ns, "job-2", mt.EnvFrom("nothere")), "Failed")},
		},
		{
			// helm uninstall / kubectl delete -f: the Secret goes at once, the
			// pods drain (a pod on an unreachable node stays Terminating).
			name: "terminating pods are ignored",
			objs: []any{mt.Secret(ns, "db", "A"),
				mt.Terminating(mt.Pod(ns, "draining", mt.Env("db", "GONE"), mt.EnvFrom("uninstalled"))),
				mt.Terminating(mt.DeployPod(ns, "web", 0, mt.Env("uninstalled", "K")))},
		},
		{
			name:    "30 replicas: one finding, one consumer with Pods 30",
			objs:    []any{mt.Secret(ns, "db", "USER"), replicas("web", 30, mt.Env("db", "USER"), mt.Env("db", "PASS"), mt.EnvFrom("web-extra"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 30))},
			absent:  []AbsentSecret{wantAbsent(ns, "web-extra", SourcePod, byDeploy("web", 30))},
		},
		{
			name: "two workloads sharing a missing key",
			objs: []any{mt.Secret(ns, "db", "USER"), replicas("web", 3, mt.Env("db", "PASS")), replicas("worker", 2, mt.Env("db", "PASS")),
				mt.Pod(ns, "debug", mt.Env("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 3), byDeploy("worker", 2), barePod("debug"))},
		},
		{
			name: "absent Secret: consumers merged across its keys",
			objs: []any{replicas("web", 4, mt.Env("db", "A"), mt.Env("db", "B")), mt.Pod(ns, "solo", mt.EnvFrom("db"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod,
				byDeploy("web", 4), barePod("solo"))},
		},
		{
			name: "a pod in another namespace with the same Secret name does not match",
			objs: []any{
				mt.Secret("a", "db", "K"),
				mt.Pod("b", "p", mt.Env("db", "K")),
				mt.Secret("c", "db"), mt.Pod("c", "q", mt.Env("db", "K")),
			},
			missing: []MissingKey{wantMissing("c", "db", "K", SourcePod, false, barePod("q"))},
			absent:  []AbsentSecret{wantAbsent("b", "db", SourcePod, barePod("p"))},
		},
		{
			name:    "ExternalSecret spec.data key missing in target",
			objs:    []any{mt.Secret(ns, "creds", "USER"), mt.ES(ns, "db", mt.ESTarget("creds"), mt.ESData("USER", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "creds", "PASS", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "ExternalSecret template, default mergePolicy: spec.data keys are not expected",
			objs: []any{mt.Secret(ns, "db", "DSN"), mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("", "DSN"))},
		},
		{
			name:    "ExternalSecret template, default mergePolicy: template key missing",
			objs:    []any{mt.Secret(ns, "db", "user", "pass"), mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("", "DSN"))},
			missing: []MissingKey{wantMissing(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "ExternalSecret template, mergePolicy Merge: data and template keys",
			objs: []any{mt.Secret(ns, "db", "DSN"), mt.ES(ns, "db", mt.ESData("user", "pass"), mt.ESTemplate("Merge", "DSN"))},
			missing: []MissingKey{
				wantMissing(ns, "db", "pass", SourceExternalSecret, false, byES("db")),
				wantMissing(ns, "db", "user", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name:   "ExternalSecret dataFrom only: target must exist",
			objs:   []any{mt.ES(ns, "bulk", mt.ESDataFrom(1, 1))},
			absent: []AbsentSecret{wantAbsent(ns, "bulk", SourceExternalSecret, byES("bulk"))},
		},
		{
			name: "ExternalSecret dataFrom only: any keys satisfy it",
			objs: []any{mt.Secret(ns, "bulk", "whatever"), mt.ES(ns, "bulk", mt.ESDataFrom(1, 1))},
		},
		{
			name: "ExternalSecret without a Ready condition yet: no expectation",
			objs: []any{mt.ES(ns, "fresh", mt.ESData("A"), mt.ESReady("", ""))},
		},
		{
			name:    "v1beta1 ExternalSecret behaves the same",
			objs:    []any{mt.Secret(ns, "old", "A"), mt.ES(ns, "old", mt.ESAPIVersion("external-secrets.io/v1beta1"), mt.ESData("A", "B"))},
			missing: []MissingKey{wantMissing(ns, "old", "B", SourceExternalSecret, false, byES("old"))},
		},
		{
			name:    "Helm: a key only in stringData of a rendered Secret is expected",
			objs:    []any{mt.Secret(ns, "shop-env", "FROM_DATA"), mt.HelmRelease(ns, "shop", 2, "deployed", mt.HelmSecret(ns, "shop-env", "FROM_DATA", "FROM_STRINGDATA"))},
			missing: []MissingKey{wantMissing(ns, "shop-env", "FROM_STRINGDATA", SourceHelm, false, byRelease("shop"))},
		},
		{
			name: "Helm: a rendered ExternalSecret's keys are expected in its target",
			objs: []any{mt.Secret(ns, "shop-runtime", "A"), mt.Secret(ns, "shop-es", "B"),
				mt.HelmRelease(ns, "shop", 1, "deployed", mt.HelmES(ns, "shop-es", "shop-runtime", "A", "B"))},
			missing: []MissingKey{wantMissing(ns, "shop-runtime", "B", SourceHelm, false, byRelease("shop"))},
		},
		{
			name:   "Helm: rendered Secret absent",
			objs:   []any{mt.HelmRelease(ns, "shop", 1, "deployed", mt.HelmSecret(ns, "shop-env", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "shop-env", SourceHelm, byRelease("shop"))},
		},
		{
			name: "Helm: several revisions, only the latest deployed counts",
			objs: []any{mt.Secret(ns, "s", "V2", "V3"),
				mt.HelmRelease(ns, "shop", 1, "superseded", mt.HelmSecret(ns, "s", "V1")),
				mt.HelmRelease(ns, "shop", 2, "deployed", mt.HelmSecret(ns, "s", "V2")),
				mt.HelmRelease(ns, "shop", 3, "deployed", mt.HelmSecret(ns, "s", "V3", "NEW")),
				mt.HelmRelease(ns, "shop", 4, "failed", mt.HelmSecret(ns, "s", "V4")),
			},
			missing: []MissingKey{wantMissing(ns, "s", "NEW", SourceHelm, false, byRelease("shop"))},
		},
		{
			name: "Helm: a corrupt payload contributes nothing and does not crash",
			objs: []any{mt.Secret(ns, "s", "A"), corrupt, mt.HelmRelease(ns, "ok", 1, "deployed", mt.HelmSecret(ns, "s", "A"))},
		},
		{
			name: "annotation on a Secret",
			objs: []any{mt.ExpectKeys(mt.Secret(ns, "plain", "A"), "A", "B", "C")},
			missing: []MissingKey{
				wantMissing(ns, "plain", "B", SourceAnnotation, false, bySecret("plain")),
				wantMissing(ns, "plain", "C", SourceAnnotation, false, bySecret("plain")),
			},
		},
		{
			name:    "annotation on an ExternalSecret applies to its target",
			objs:    []any{mt.Secret(ns, "tgt", "X"), mt.ES(ns, "ext", mt.ESTarget("tgt"), mt.ESData("X"), mt.ESExpectKeys("X", "Y"))},
			missing: []MissingKey{wantMissing(ns, "tgt", "Y", SourceAnnotation, false, byES("ext"))},
		},
		{
			name:   "annotation on an ExternalSecret with absent target",
			objs:   []any{mt.ES(ns, "ext", mt.ESTarget("tgt"), mt.ESData("X"), mt.ESExpectKeys("X"))},
			absent: []AbsentSecret{wantAbsent(ns, "tgt", SourceAnnotation, byES("ext")), wantAbsent(ns, "tgt", SourceExternalSecret, byES("ext"))},
		},
		{
			name:   "one absent Secret expected by several sources: one row per source",
			objs:   []any{mt.ES(ns, "db", mt.ESData("A")), mt.Pod(ns, "p", mt.Env("db", "A")), mt.HelmRelease(ns, "r", 1, "deployed", mt.HelmES(ns, "db", "db", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourceExternalSecret, byES("db")), wantAbsent(ns, "db", SourceHelm, byRelease("r")), wantAbsent(ns, "db", SourcePod, barePod("p"))},
		},
		{
			name:  "Secrets not available: nothing at all",
			objs:  []any{mt.Pod(ns, "p", mt.Env("db", "A"), mt.EnvFrom("cfg")), mt.ES(ns, "db", mt.ESData("A")), mt.ExpectKeys(mt.Secret(ns, "x"), "K")},
			avail: mt.AllBut(model.ResSecrets),
		},
		{
			name:    "pods not available: no pod-source findings, ExternalSecret ones remain",
			objs:    []any{mt.Secret(ns, "db", "A"), mt.Pod(ns, "p", mt.Env("db", "B"), mt.EnvFrom("cfg")), mt.ES(ns, "db", mt.ESData("A", "C"))},
			avail:   mt.AllBut(model.ResPods),
			missing: []MissingKey{wantMissing(ns, "db", "C", SourceExternalSecret, false, byES("db"))},
		},
		{
			name:    "ExternalSecrets not available: no ExternalSecret-source findings",
			objs:    []any{mt.Secret(ns, "db", "A"), mt.Pod(ns, "p", mt.Env("db", "B")), mt.ES(ns, "db", mt.ESData("C"), mt.ESExpectKeys("D"))},
			avail:   mt.AllBut(model.ResExternalSecrets),
			missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("p"))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = mt.All()
			}
			s := mt.NewStore(t, tc.objs...)
			got := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, avail) })
			checkMissingKeys(t, got, MissingKeysResult{Missing: tc.missing, Absent: tc.absent})
		})
	}
}

// A Secret created after the pod that reads it: absent first, then nothing once the
// Secret appears; then a key the pod needs disappears and comes back.
func TestMissingKeysSecretCreatedAfterPod(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.DeployPod(ns, "web", 0, mt.Env("db", "PASS"), mt.EnvFrom("db")), mt.DeployPod(ns, "web", 1, mt.Env("db", "PASS")))
	run := func() MissingKeysResult {
		return mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	}

	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, byDeploy("web", 2))}})

	s.UpsertSecret(mt.Secret(ns, "db", "USER"), mt.T0)
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 2))}})

	s.UpsertSecret(mt.Secret(ns, "db", "USER", "PASS"), mt.T0.Add(1))
	checkMissingKeys(t, run(), MissingKeysResult{})

	// The Secret is deleted again; then the pods go away too.
	s.DeleteSecret(ns, "db", mt.T0)
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, byDeploy("web", 2))}})
	s.DeletePod(ns, "web-7d9c5b-00000")
	s.DeletePod(ns, "web-7d9c5b-00001")
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// A pod that changes which Secret it reads is re-indexed; a Succeeded update clears it.
func TestMissingKeysPodUpdates(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.Secret(ns, "db", "A"), mt.Pod(ns, "p", mt.Env("db", "B")))
	run := func() MissingKeysResult {
		return mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	}
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("p"))}})
	s.UpsertPod(mt.Pod(ns, "p", mt.Env("db", "A")))
	checkMissingKeys(t, run(), MissingKeysResult{})
	s.UpsertPod(mt.WithPhase(mt.Pod(ns, "p", mt.Env("db", "B")), "Succeeded"))
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// An ExternalSecret that gains its Ready condition starts to state expectations;
// its target Secret appearing clears the absent finding.
func TestMissingKeysExternalSecretLifecycle(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.ES(ns, "db", mt.ESData("A", "B"), mt.ESReady("", "")))
	run := func() MissingKeysResult {
		return mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	}
	checkMissingKeys(t, run(), MissingKeysResult{})
	s.UpsertExternalSecret(mt.ES(ns, "db", mt.ESData("A", "B")), time.Time{})
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourceExternalSecret, byES("db"))}})
	s.UpsertSecret(mt.Secret(ns, "db", "A"), mt.T0)
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "B", SourceExternalSecret, false, byES("db"))}})
	// Retargeting the ExternalSecret moves the expectation.
	s.UpsertExternalSecret(mt.ES(ns, "db", mt.ESTarget("db2"), mt.ESData("A", "B")), time.Time{})
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db2", SourceExternalSecret, byES("db"))}})
	s.DeleteExternalSecret(ns, "db")
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// Running the detector twice on the same store gives the same answer (no state, no
// mutation of shared records).
func TestMissingKeysIdempotent(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.Secret(ns, "db", "A"), mt.Pod(ns, "a", mt.Env("db", "B")), mt.Pod(ns, "b", mt.EnvFrom("gone")), mt.Pod(ns, "c", mt.EnvFrom("gone"), mt.Env("gone", "K")))
	first := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	second := mt.Read(s, func(v model.View) MissingKeysResult { return MissingKeys(v, mt.All()) })
	want := MissingKeysResult{
		Missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("a"))},
		Absent:  []AbsentSecret{wantAbsent(ns, "gone", SourcePod, barePod("b"), barePod("c"))},
	}
	checkMissingKeys(t, first, want)
	checkMissingKeys(t, second, want)
}

// SecretReaders names every pod that references a Secret, imagePullSecrets
// included ("who reads this"); SecretDataReaders, the page alerts' consumer
// condition, leaves out the pods that only pull images with it.
func TestSecretReadersAndImagePullSecrets(t *testing.T) {
	const ns = "app"
	s := mt.NewStore(t, mt.Secret(ns, "regcred", ".dockerconfigjson"),
		mt.DeployPod(ns, "web", 0, mt.ImagePull("regcred")), mt.DeployPod(ns, "web", 1, mt.ImagePull("regcred")),
		mt.Pod(ns, "both", mt.ImagePull("regcred"), mt.VolItem("regcred", ".dockerconfigjson")))
	all := mt.Read(s, func(v model.View) []Consumer { return SecretReaders(v, ns, "regcred") })
	checkSlice(t, "SecretReaders", all, []Consumer{{Kind: "Deployment", Name: "web", Pods: 2}, barePod("both")})
	data := mt.Read(s, func(v model.View) []Consumer { return SecretDataReaders(v, ns, "regcred") })
	checkSlice(t, "SecretDataReaders", data, []Consumer{barePod("both")})
}

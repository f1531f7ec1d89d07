package detect

import (
	"testing"

	"github.com/driftwatch/driftwatch/internal/model"
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
			ps = append(ps, deployPod(ns, deployName, i, uses...))
		}
		return ps
	}
	corrupt := release(ns, "broken", 7, "deployed")
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
				secret(ns, "db", "USER", "PASS"), secret(ns, "tls", "tls.crt", "tls.key"),
				pod(ns, "p", useEnv("db", "USER"), optEnv("db", "PASS"), envFrom("db"), volItem("tls", "tls.crt"), projItem("tls", "tls.key")),
				es(ns, "db", esData("USER", "PASS")), es(ns, "bulk", esTarget("db"), esDataFrom(1, 1)),
				release(ns, "r", 1, "deployed", helmSecret(ns, "tls", "tls.crt")),
				annotated(secret(ns, "ann", "A"), "A"),
			},
		},
		{
			name:    "optional secretKeyRef: the silent kind, reported with Optional",
			objs:    []any{secret(ns, "db", "USER"), pod(ns, "p", useEnv("db", "USER"), optEnv("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, true, barePod("p"))},
		},
		{
			name:    "non-optional secretKeyRef",
			objs:    []any{secret(ns, "db", "USER"), pod(ns, "p", useEnv("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, barePod("p"))},
		},
		{
			name:   "envFrom non-optional: absent when the Secret is missing",
			objs:   []any{pod(ns, "p", envFrom("cfg"))},
			absent: []AbsentSecret{wantAbsent(ns, "cfg", SourcePod, barePod("p"))},
		},
		{
			name: "envFrom optional: no finding when the Secret is missing",
			objs: []any{pod(ns, "p", optEnvFrom("cfg"))},
		},
		{
			// Argo CD v2.14 install.yaml: argocd-dex-server-tls and
			// argocd-repo-server-tls are optional secret volumes with items,
			// absent in a default install. A feature switched off, not a finding.
			name: "absent Secret referenced only optionally (volume items, secretKeyRef): nothing",
			objs: []any{pod(ns, "p", optVolItem("dex-tls", "tls.crt"), optVolItem("dex-tls", "ca.crt"), optEnv("feature", "TOKEN")),
				deployPod(ns, "web", 0, optEnv("feature", "TOKEN"))},
		},
		{
			name:   "absent Secret referenced optionally by one pod and required by another: absent, the required reader counts",
			objs:   []any{pod(ns, "opt", optEnv("db", "A")), pod(ns, "req", useEnv("db", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, barePod("req"))},
		},
		{
			name:    "optional secretKeyRef to a missing key of an existing Secret stays a finding, marked optional",
			objs:    []any{secret(ns, "db", "A"), pod(ns, "p", optVolItem("db", "ca.crt"))},
			missing: []MissingKey{wantMissing(ns, "db", "ca.crt", SourcePod, true, barePod("p"))},
		},
		{
			// ESO v0.20.4: creationPolicy None creates and updates nothing and
			// reports Ready=True SecretSynced.
			name: "ExternalSecret with creationPolicy None expects nothing of its target",
			objs: []any{es(ns, "none", esCreation("None"), esTarget("ext"), esData("A")),
				es(ns, "none2", esCreation("None"), esTarget("short"), esData("A", "B")), secret(ns, "short", "A")},
		},
		{
			name:    "creationPolicy None keeps the expected-keys annotation: the user's own declaration",
			objs:    []any{secret(ns, "short", "A"), es(ns, "none", esCreation("None"), esTarget("short"), esData("A"), esAnnotated("A", "B"))},
			missing: []MissingKey{wantMissing(ns, "short", "B", SourceAnnotation, false, byES("none"))},
		},
		{
			name: "envFrom of an existing but empty Secret names no key",
			objs: []any{secret(ns, "cfg"), pod(ns, "p", envFrom("cfg"))},
		},
		{
			name:    "secret volume items and projected sources",
			objs:    []any{secret(ns, "tls", "tls.crt"), secret(ns, "bundle"), pod(ns, "p", volItem("tls", "tls.key"), volItem("tls", "tls.crt"), projItem("bundle", "ca.crt"))},
			missing: []MissingKey{wantMissing(ns, "bundle", "ca.crt", SourcePod, false, barePod("p")), wantMissing(ns, "tls", "tls.key", SourcePod, false, barePod("p"))},
		},
		{
			name: "init and ephemeral containers",
			objs: []any{secret(ns, "db", "A"), pod(ns, "p",
				inContainer(useEnv("db", "INIT_KEY"), "init-migrate"), inContainer(useEnv("db", "EPH_KEY"), "debugger-abc"))},
			missing: []MissingKey{
				wantMissing(ns, "db", "EPH_KEY", SourcePod, false, barePod("p")),
				wantMissing(ns, "db", "INIT_KEY", SourcePod, false, barePod("p")),
			},
		},
		{
			name: "pods in phase Succeeded or Failed are ignored",
			objs: []any{secret(ns, "db", "A"),
				withPhase(pod(ns, "job-1", useEnv("db", "GONE")), "Succeeded"),
				withPhase(pod(ns, "job-2", envFrom("nothere")), "Failed")},
		},
		{
			name:    "30 replicas: one finding, one consumer with Pods 30",
			objs:    []any{secret(ns, "db", "USER"), replicas("web", 30, useEnv("db", "USER"), useEnv("db", "PASS"), envFrom("web-extra"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 30))},
			absent:  []AbsentSecret{wantAbsent(ns, "web-extra", SourcePod, byDeploy("web", 30))},
		},
		{
			name: "two workloads sharing a missing key",
			objs: []any{secret(ns, "db", "USER"), replicas("web", 3, useEnv("db", "PASS")), replicas("worker", 2, useEnv("db", "PASS")),
				pod(ns, "debug", useEnv("db", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 3), byDeploy("worker", 2), barePod("debug"))},
		},
		{
			name: "absent Secret: consumers merged across its keys",
			objs: []any{replicas("web", 4, useEnv("db", "A"), useEnv("db", "B")), pod(ns, "solo", envFrom("db"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod,
				byDeploy("web", 4), barePod("solo"))},
		},
		{
			name: "a pod in another namespace with the same Secret name does not match",
			objs: []any{
				secret("a", "db", "K"),
				pod("b", "p", useEnv("db", "K")),
				secret("c", "db"), pod("c", "q", useEnv("db", "K")),
			},
			missing: []MissingKey{wantMissing("c", "db", "K", SourcePod, false, barePod("q"))},
			absent:  []AbsentSecret{wantAbsent("b", "db", SourcePod, barePod("p"))},
		},
		{
			name:    "ExternalSecret spec.data key missing in target",
			objs:    []any{secret(ns, "creds", "USER"), es(ns, "db", esTarget("creds"), esData("USER", "PASS"))},
			missing: []MissingKey{wantMissing(ns, "creds", "PASS", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "ExternalSecret template, default mergePolicy: spec.data keys are not expected",
			objs: []any{secret(ns, "db", "DSN"), es(ns, "db", esData("user", "pass"), esTemplate("", "DSN"))},
		},
		{
			name:    "ExternalSecret template, default mergePolicy: template key missing",
			objs:    []any{secret(ns, "db", "user", "pass"), es(ns, "db", esData("user", "pass"), esTemplate("", "DSN"))},
			missing: []MissingKey{wantMissing(ns, "db", "DSN", SourceExternalSecret, false, byES("db"))},
		},
		{
			name: "ExternalSecret template, mergePolicy Merge: data and template keys",
			objs: []any{secret(ns, "db", "DSN"), es(ns, "db", esData("user", "pass"), esTemplate("Merge", "DSN"))},
			missing: []MissingKey{
				wantMissing(ns, "db", "pass", SourceExternalSecret, false, byES("db")),
				wantMissing(ns, "db", "user", SourceExternalSecret, false, byES("db")),
			},
		},
		{
			name:   "ExternalSecret dataFrom only: target must exist",
			objs:   []any{es(ns, "bulk", esDataFrom(1, 1))},
			absent: []AbsentSecret{wantAbsent(ns, "bulk", SourceExternalSecret, byES("bulk"))},
		},
		{
			name: "ExternalSecret dataFrom only: any keys satisfy it",
			objs: []any{secret(ns, "bulk", "whatever"), es(ns, "bulk", esDataFrom(1, 1))},
		},
		{
			name: "ExternalSecret without a Ready condition yet: no expectation",
			objs: []any{es(ns, "fresh", esData("A"), esReady("", ""))},
		},
		{
			name:    "v1beta1 ExternalSecret behaves the same",
			objs:    []any{secret(ns, "old", "A"), es(ns, "old", esAPIVersion("external-secrets.io/v1beta1"), esData("A", "B"))},
			missing: []MissingKey{wantMissing(ns, "old", "B", SourceExternalSecret, false, byES("old"))},
		},
		{
			name:    "Helm: a key only in stringData of a rendered Secret is expected",
			objs:    []any{secret(ns, "shop-env", "FROM_DATA"), release(ns, "shop", 2, "deployed", helmSecret(ns, "shop-env", "FROM_DATA", "FROM_STRINGDATA"))},
			missing: []MissingKey{wantMissing(ns, "shop-env", "FROM_STRINGDATA", SourceHelm, false, byRelease("shop"))},
		},
		{
			name: "Helm: a rendered ExternalSecret's keys are expected in its target",
			objs: []any{secret(ns, "shop-runtime", "A"), secret(ns, "shop-es", "B"),
				release(ns, "shop", 1, "deployed", helmES(ns, "shop-es", "shop-runtime", "A", "B"))},
			missing: []MissingKey{wantMissing(ns, "shop-runtime", "B", SourceHelm, false, byRelease("shop"))},
		},
		{
			name:   "Helm: rendered Secret absent",
			objs:   []any{release(ns, "shop", 1, "deployed", helmSecret(ns, "shop-env", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "shop-env", SourceHelm, byRelease("shop"))},
		},
		{
			name: "Helm: several revisions, only the latest deployed counts",
			objs: []any{secret(ns, "s", "V2", "V3"),
				release(ns, "shop", 1, "superseded", helmSecret(ns, "s", "V1")),
				release(ns, "shop", 2, "deployed", helmSecret(ns, "s", "V2")),
				release(ns, "shop", 3, "deployed", helmSecret(ns, "s", "V3", "NEW")),
				release(ns, "shop", 4, "failed", helmSecret(ns, "s", "V4")),
			},
			missing: []MissingKey{wantMissing(ns, "s", "NEW", SourceHelm, false, byRelease("shop"))},
		},
		{
			name: "Helm: a corrupt payload contributes nothing and does not crash",
			objs: []any{secret(ns, "s", "A"), corrupt, release(ns, "ok", 1, "deployed", helmSecret(ns, "s", "A"))},
		},
		{
			name: "annotation on a Secret",
			objs: []any{annotated(secret(ns, "plain", "A"), "A", "B", "C")},
			missing: []MissingKey{
				wantMissing(ns, "plain", "B", SourceAnnotation, false, bySecret("plain")),
				wantMissing(ns, "plain", "C", SourceAnnotation, false, bySecret("plain")),
			},
		},
		{
			name:    "annotation on an ExternalSecret applies to its target",
			objs:    []any{secret(ns, "tgt", "X"), es(ns, "ext", esTarget("tgt"), esData("X"), esAnnotated("X", "Y"))},
			missing: []MissingKey{wantMissing(ns, "tgt", "Y", SourceAnnotation, false, byES("ext"))},
		},
		{
			name:   "annotation on an ExternalSecret with absent target",
			objs:   []any{es(ns, "ext", esTarget("tgt"), esData("X"), esAnnotated("X"))},
			absent: []AbsentSecret{wantAbsent(ns, "tgt", SourceAnnotation, byES("ext")), wantAbsent(ns, "tgt", SourceExternalSecret, byES("ext"))},
		},
		{
			name:   "one absent Secret expected by several sources: one row per source",
			objs:   []any{es(ns, "db", esData("A")), pod(ns, "p", useEnv("db", "A")), release(ns, "r", 1, "deployed", helmES(ns, "db", "db", "A"))},
			absent: []AbsentSecret{wantAbsent(ns, "db", SourceExternalSecret, byES("db")), wantAbsent(ns, "db", SourceHelm, byRelease("r")), wantAbsent(ns, "db", SourcePod, barePod("p"))},
		},
		{
			name:  "Secrets not available: nothing at all",
			objs:  []any{pod(ns, "p", useEnv("db", "A"), envFrom("cfg")), es(ns, "db", esData("A")), annotated(secret(ns, "x"), "K")},
			avail: allBut(model.ResSecrets),
		},
		{
			name:    "pods not available: no pod-source findings, ExternalSecret ones remain",
			objs:    []any{secret(ns, "db", "A"), pod(ns, "p", useEnv("db", "B"), envFrom("cfg")), es(ns, "db", esData("A", "C"))},
			avail:   allBut(model.ResPods),
			missing: []MissingKey{wantMissing(ns, "db", "C", SourceExternalSecret, false, byES("db"))},
		},
		{
			name:    "ExternalSecrets not available: no ExternalSecret-source findings",
			objs:    []any{secret(ns, "db", "A"), pod(ns, "p", useEnv("db", "B")), es(ns, "db", esData("C"), esAnnotated("D"))},
			avail:   allBut(model.ResExternalSecrets),
			missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("p"))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avail := tc.avail
			if avail == nil {
				avail = availAll()
			}
			s := newStore(t, tc.objs...)
			got := readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, avail) })
			checkMissingKeys(t, got, MissingKeysResult{Missing: tc.missing, Absent: tc.absent})
		})
	}
}

// A Secret created after the pod that reads it: absent first, then nothing once the
// Secret appears; then a key the pod needs disappears and comes back.
func TestMissingKeysSecretCreatedAfterPod(t *testing.T) {
	const ns = "app"
	s := newStore(t, deployPod(ns, "web", 0, useEnv("db", "PASS"), envFrom("db")), deployPod(ns, "web", 1, useEnv("db", "PASS")))
	run := func() MissingKeysResult {
		return readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, availAll()) })
	}

	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, byDeploy("web", 2))}})

	s.UpsertSecret(secret(ns, "db", "USER"), fxT0)
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "PASS", SourcePod, false, byDeploy("web", 2))}})

	s.UpsertSecret(secret(ns, "db", "USER", "PASS"), fxT0.Add(1))
	checkMissingKeys(t, run(), MissingKeysResult{})

	// The Secret is deleted again; then the pods go away too.
	s.DeleteSecret(ns, "db", fxT0)
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourcePod, byDeploy("web", 2))}})
	s.DeletePod(ns, "web-7d9c5b-00000")
	s.DeletePod(ns, "web-7d9c5b-00001")
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// A pod that changes which Secret it reads is re-indexed; a Succeeded update clears it.
func TestMissingKeysPodUpdates(t *testing.T) {
	const ns = "app"
	s := newStore(t, secret(ns, "db", "A"), pod(ns, "p", useEnv("db", "B")))
	run := func() MissingKeysResult {
		return readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, availAll()) })
	}
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("p"))}})
	s.UpsertPod(pod(ns, "p", useEnv("db", "A")))
	checkMissingKeys(t, run(), MissingKeysResult{})
	s.UpsertPod(withPhase(pod(ns, "p", useEnv("db", "B")), "Succeeded"))
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// An ExternalSecret that gains its Ready condition starts to state expectations;
// its target Secret appearing clears the absent finding.
func TestMissingKeysExternalSecretLifecycle(t *testing.T) {
	const ns = "app"
	s := newStore(t, es(ns, "db", esData("A", "B"), esReady("", "")))
	run := func() MissingKeysResult {
		return readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, availAll()) })
	}
	checkMissingKeys(t, run(), MissingKeysResult{})
	s.UpsertExternalSecret(es(ns, "db", esData("A", "B")))
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db", SourceExternalSecret, byES("db"))}})
	s.UpsertSecret(secret(ns, "db", "A"), fxT0)
	checkMissingKeys(t, run(), MissingKeysResult{Missing: []MissingKey{wantMissing(ns, "db", "B", SourceExternalSecret, false, byES("db"))}})
	// Retargeting the ExternalSecret moves the expectation.
	s.UpsertExternalSecret(es(ns, "db", esTarget("db2"), esData("A", "B")))
	checkMissingKeys(t, run(), MissingKeysResult{Absent: []AbsentSecret{wantAbsent(ns, "db2", SourceExternalSecret, byES("db"))}})
	s.DeleteExternalSecret(ns, "db")
	checkMissingKeys(t, run(), MissingKeysResult{})
}

// Running the detector twice on the same store gives the same answer (no state, no
// mutation of shared records).
func TestMissingKeysIdempotent(t *testing.T) {
	const ns = "app"
	s := newStore(t, secret(ns, "db", "A"), pod(ns, "a", useEnv("db", "B")), pod(ns, "b", envFrom("gone")), pod(ns, "c", envFrom("gone"), useEnv("gone", "K")))
	first := readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, availAll()) })
	second := readView(s, func(v model.View) MissingKeysResult { return MissingKeys(v, availAll()) })
	want := MissingKeysResult{
		Missing: []MissingKey{wantMissing(ns, "db", "B", SourcePod, false, barePod("a"))},
		Absent:  []AbsentSecret{wantAbsent(ns, "gone", SourcePod, barePod("b"), barePod("c"))},
	}
	checkMissingKeys(t, first, want)
	checkMissingKeys(t, second, want)
}

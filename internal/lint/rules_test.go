package lint

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func lintString(t testing.TB, src string, opts Options) *Report {
	t.Helper()
	docs, probs := ParseStream("m.yaml", []byte(src))
	return Evaluate(&Input{Docs: docs, Problems: probs, Files: 1}, opts)
}

// got renders a report's findings as "rule@line", its assumptions as
// "assume:rule@line" and its problems as "problem@line", sorted.
func got(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s@%d", f.Rule, f.Locations[0].Line))
	}
	for _, a := range r.Assumptions {
		out = append(out, fmt.Sprintf("assume:%s@%d", a.Rule, a.Locations[0].Line))
	}
	for _, p := range r.Problems {
		if p.Note {
			out = append(out, fmt.Sprintf("note@%d", p.Line))
			continue
		}
		out = append(out, fmt.Sprintf("problem@%d", p.Line))
	}
	slices.Sort(out)
	return out
}

const deployReading = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - name: A
              valueFrom:
                secretKeyRef:
                  name: db
                  key: password
`

const esDB = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: db
  namespace: shop
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target:
    creationPolicy: Owner
  data:
    - secretKey: username
      remoteRef: {key: db, property: username}
`

func TestRules(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		strict bool
		want   []string
	}{
		{"key the ExternalSecret does not write", deployReading + "---\n" + esDB,
			false, []string{"missing_key@16"}},
		{"key the ExternalSecret writes", strings.Replace(deployReading, "key: password", "key: username", 1) + "---\n" + esDB,
			false, nil},
		{"key the Secret manifest lacks", deployReading + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
stringData: {username: u}
`, false, []string{"data_in_manifest@21", "missing_key@16"}},
		{"optional reference: still reported, as a warning", strings.Replace(deployReading, "key: password", "key: password\n                  optional: true", 1) + "---\n" + esDB,
			false, []string{"missing_key@16"}},
		{"a Secret made elsewhere is an assumption", deployReading, false, []string{"assume:absent_secret@15"}},
		{"... and a finding with --strict", deployReading, true, []string{"absent_secret@15"}},
		{"an optional whole-Secret reference expects nothing", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      envFrom:
        - secretRef: {name: elsewhere, optional: true}
`, true, nil},
		{"dataFrom: the key set is open", deployReading + "---\n" + strings.Replace(esDB, "  data:\n", "  dataFrom:\n    - extract: {key: db}\n  data:\n", 1),
			false, []string{"assume:missing_key@16"}},
		{"dataFrom with --strict", deployReading + "---\n" + strings.Replace(esDB, "  data:\n", "  dataFrom:\n    - extract: {key: db}\n  data:\n", 1),
			true, []string{"missing_key@16"}},
		{"creationPolicy None writes nothing: the Secret comes from elsewhere",
			strings.Replace(deployReading, "key: password", "key: username", 1) + "---\n" + strings.Replace(esDB, "creationPolicy: Owner", "creationPolicy: None", 1),
			false, []string{"assume:absent_secret@15"}},
		{"creationPolicy Merge never creates the Secret",
			strings.Replace(deployReading, "key: password", "key: username", 1) + "---\n" + strings.Replace(esDB, "creationPolicy: Owner", "creationPolicy: Merge", 1),
			false, []string{"assume:absent_secret@15", "assume:absent_secret@25"}},
		{"Merge into a Secret of the rendering: its keys and the ExternalSecret's", deployReading + "---\n" + strings.Replace(esDB, "creationPolicy: Owner", "creationPolicy: Merge", 1) + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
data: {password: cGFzcw==}
`, false, []string{"data_in_manifest@34"}},
		{"implicit creationPolicy", strings.Replace(esDB, "    creationPolicy: Owner\n", "    name: db\n", 1),
			false, []string{"implicit_creation_policy@8"}},
		{"implicit creationPolicy without a target block: reported at spec", strings.Replace(esDB, "  target:\n    creationPolicy: Owner\n", "", 1),
			false, []string{"implicit_creation_policy@6"}},
		{"delete with merge", strings.Replace(esDB, "creationPolicy: Owner", "creationPolicy: Merge\n    deletionPolicy: Delete", 1),
			false, []string{"assume:absent_secret@8", "delete_with_merge@10"}},
		{"delete with merge onto a Secret of the rendering", strings.Replace(esDB, "creationPolicy: Owner", "creationPolicy: Merge\n    deletionPolicy: Delete", 1) + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
`, false, []string{"delete_with_merge@10"}},
		{"Owner over a Secret the rendering also defines with data", strings.Replace(deployReading, "key: password", "key: username", 1) + "---\n" + esDB + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
data: {password: cGFzcw==}
`, false, []string{"data_in_manifest@34", "owner_over_existing@25"}},
		{"Owner over an empty placeholder Secret: no second writer of data", esDB + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
`, false, nil},
		{"expected-keys annotation naming a key nothing writes", strings.Replace(esDB, "  namespace: shop\n", "  namespace: shop\n  annotations:\n    driftwatch.io/expected-keys: username,url\n", 1),
			false, []string{"missing_key@7"}},
		{"duplicate credentials", `apiVersion: v1
kind: Secret
metadata: {name: a, namespace: x}
data: {token: c2FtZQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: b, namespace: x}
stringData: {token: same}
`, false, []string{"data_in_manifest@4", "data_in_manifest@9", "duplicate_credentials@6"}},
		{"same data in two namespaces is no duplicate", `apiVersion: v1
kind: Secret
metadata: {name: a, namespace: x}
data: {token: c2FtZQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: a, namespace: y}
data: {token: c2FtZQ==}
`, false, []string{"data_in_manifest@4", "data_in_manifest@9"}},
		{"last-applied carrying data", `apiVersion: v1
kind: Secret
metadata:
  name: a
  namespace: x
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","namespace":"x"},"data":{"token":"b2xk"}}
data: {token: bmV3}
`, false, []string{"data_in_manifest@9", "last_applied_data@7"}},
		{"ignore annotation on the Secret", `apiVersion: v1
kind: Secret
metadata:
  name: a
  annotations: {driftwatch.io/ignore: data_in_manifest}
data: {token: c2FtZQ==}
`, false, nil},
		{"ignore annotation on the namespace", `apiVersion: v1
kind: Namespace
metadata:
  name: x
  annotations: {driftwatch.io/ignore: all}
---
apiVersion: v1
kind: Secret
metadata: {name: a, namespace: x}
data: {token: c2FtZQ==}
`, false, nil},
		{"ignore annotation on the workload", strings.Replace(deployReading, "  namespace: shop\n", "  namespace: shop\n  annotations: {driftwatch.io/ignore: missing_keys}\n", 1) + "---\n" + esDB,
			false, nil},
		{"ignore on the ExternalSecret's target template", deployReading + "---\n" + strings.Replace(esDB, "    creationPolicy: Owner\n",
			"    creationPolicy: Owner\n    template:\n      metadata:\n        annotations: {driftwatch.io/ignore: missing_keys}\n", 1),
			false, nil},
		{"an empty Secret is a placeholder: its keys are assumed", deployReading + `---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
`, false, []string{"assume:missing_key@16"}},
		{"CronJob, volume items", `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: c, volumeMounts: [{name: v, mountPath: /s}]}]
          volumes:
            - name: v
              secret:
                secretName: db
                items:
                  - key: username
                    path: u
                  - key: cert
                    path: c
---
` + esDB, false, []string{"missing_key@18"}},
		{"List items", `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Pod
    metadata: {name: p, namespace: shop}
    spec:
      containers:
        - name: c
          env: [{name: X, valueFrom: {secretKeyRef: {name: db, key: nope}}}]
  - ` + strings.ReplaceAll(strings.TrimSuffix(esDB, "\n"), "\n", "\n    ") + "\n",
			false, []string{"missing_key@10"}},
		{"Argo CD ignoreDifferences into a list with RespectIgnoreDifferences", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app, namespace: argocd}
spec:
  destination: {namespace: shop, server: https://kubernetes.default.svc}
  ignoreDifferences:
    - group: external-secrets.io
      kind: ExternalSecret
      jqPathExpressions:
        - .spec.data[].remoteRef.conversionStrategy
  syncPolicy:
    syncOptions: [RespectIgnoreDifferences=true]
`, false, []string{"argocd_ignore_list_trap@10"}},
		{"Argo CD ignoreDifferences on a scalar", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app, namespace: argocd}
spec:
  ignoreDifferences:
    - group: apps
      kind: Deployment
      jsonPointers: [/spec/replicas]
  syncPolicy:
    syncOptions: [RespectIgnoreDifferences=true]
`, false, nil},
		{"Argo CD glob entry: not judged offline", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app, namespace: argocd}
spec:
  ignoreDifferences:
    - group: "*"
      kind: "*"
      jqPathExpressions: [".spec.data[]"]
  syncPolicy:
    syncOptions: [RespectIgnoreDifferences=true]
`, false, []string{"assume:argocd_ignore_list_trap@6"}},
		// kustomize.toolkit.fluxcd.io/ssa: IfNotPresent and its kin: kustomize-controller
		// skips the object (fluxcd/pkg/ssa shouldSkipApply), so what Git adds never ships.
		{"Flux IfNotPresent ExternalSecret", strings.Replace(esDB, "  namespace: shop\n",
			"  namespace: shop\n  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", 1),
			false, []string{"flux_never_updated@7"}},
		{"Flux IfNotPresent Secret with data, as a label in lower case", `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  labels:
    app: shop
    kustomize.toolkit.fluxcd.io/ssa: ifnotpresent
data: {password: cGFzcw==}
`, false, []string{"data_in_manifest@9", "flux_never_updated@8"}},
		{"Flux reconcile disabled and ssa Ignore", strings.Replace(esDB, "  namespace: shop\n",
			"  namespace: shop\n  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n", 1) + `---
apiVersion: v1
kind: Secret
metadata:
  name: other
  namespace: shop
  annotations: {kustomize.toolkit.fluxcd.io/ssa: Ignore}
stringData: {token: t}
`, false, []string{"data_in_manifest@22", "flux_never_updated@21", "flux_never_updated@7"}},
		{"Flux IfNotPresent placeholder Secret without data: nothing in Git to miss", `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}
`, false, nil},
		{"Flux ssa Merge, force, other values: applied", `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  annotations: {kustomize.toolkit.fluxcd.io/ssa: Merge, kustomize.toolkit.fluxcd.io/force: enabled, kustomize.toolkit.fluxcd.io/reconcile: enabled}
  labels: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresentX}
data: {password: cGFzcw==}
`, false, []string{"data_in_manifest@8"}},
		{"Flux IfNotPresent silenced by driftwatch.io/ignore", strings.Replace(esDB, "  namespace: shop\n",
			"  namespace: shop\n  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n    driftwatch.io/ignore: flux_never_updated\n", 1),
			false, nil},
		{"workload identity: the annotation missing", `apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws, namespace: shop}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth:
        jwt:
          serviceAccountRef: {name: eso-reader}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: eso-reader, namespace: shop}
`, false, []string{"workload_identity_missing@15"}},
		{"workload identity: the ServiceAccount elsewhere", `apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws, namespace: shop}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth:
        jwt:
          serviceAccountRef: {name: eso-reader}
`, false, []string{"assume:workload_identity_missing@11"}},
		{"a malformed document is reported, the rest checked", "a: [\n---\n" + deployReading + "---\n" + esDB,
			false, []string{"missing_key@18", "problem@1"}},
		{"invalid base64 in data", `apiVersion: v1
kind: Secret
metadata: {name: a}
data: {token: "%%%"}
`, false, []string{"data_in_manifest@4", "problem@1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lintString(t, c.src, Options{Strict: c.strict})
			if g := got(r); !slices.Equal(g, c.want) {
				t.Errorf("got %q, want %q", g, c.want)
				for _, f := range r.Findings {
					t.Logf("finding %s %s: %s %v", f.Rule, f.Severity, f.Message, f.Locations)
				}
				for _, a := range r.Assumptions {
					t.Logf("assumption %s: %s", a.Rule, a.Message)
				}
				for _, p := range r.Problems {
					t.Logf("problem %d: %s", p.Line, p.Message)
				}
			}
		})
	}
}

// A detector's finding kept out by driftwatch.io/ignore is counted in the
// report (the evaluation's Silenced, what driftwatch_findings_silenced sums).
func TestSilencedDetectorFindingIsCounted(t *testing.T) {
	const src = `apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: aws, namespace: shop}
spec:
  provider:
    aws:
      service: SecretsManager
      region: eu-west-1
      auth:
        jwt:
          serviceAccountRef: {name: eso-reader}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: eso-reader
  namespace: shop
  annotations: {driftwatch.io/ignore: workload_identity}
`
	r := lintString(t, src, Options{})
	if g := got(r); len(g) != 0 || r.Silenced != 1 {
		t.Fatalf("findings %v, silenced %d; want none and 1", g, r.Silenced)
	}
	r = lintString(t, strings.Replace(src, "  annotations: {driftwatch.io/ignore: workload_identity}\n", "", 1), Options{})
	if g := got(r); len(g) != 1 || r.Silenced != 0 {
		t.Fatalf("without the annotation: findings %v, silenced %d; want one and 0", g, r.Silenced)
	}
}

package demo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Flux part, namespace "fluxapps": three Kustomizations of one GitRepository
// whose artifact the demo's source-controller stand-in serves (Transport), each
// claiming the artifact's revision applied (Ready=True, lastAppliedRevision).
// Expected findings:
//
//   - driftwatch_flux_never_updated{kind="Secret",name="vendor-api",kustomization="vendor",reason="ssa_if_not_present",set_in="git"}:
//     Git added WEBHOOK_SECRET to a Secret marked kustomize.toolkit.fluxcd.io/ssa: IfNotPresent,
//     which Flux created once and never patches; the flux source misses the key;
//   - driftwatch_flux_ignore_trap{kustomization="ledger",kind="ExternalSecret",path="/spec/data",biting="true"}:
//     spec.ignore keeps the ExternalSecret's new LEDGER_TOKEN entry from shipping;
//   - driftwatch_flux_substitute_missing{kustomization="notify",name="notify-vars",variable="SMTP_HOST",reason="absent"}:
//     an optional substituteFrom Secret that does not exist, ${SMTP_HOST} without a default
//     (SMTP_PORT is set inline, so SMTP_HOST shipped empty).
//
// Look-alike: Kustomization "assets" applies a Secret Git and the cluster agree on.
func init() { addPart(fluxPart) }

const (
	fluxNS       = "fluxapps"
	fluxRevision = "main@sha1:5e3c1f0a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e"
	// fluxArtifactURL is where source-controller would serve the artifact; the
	// demo's Transport answers it.
	fluxArtifactURL = "http://source-controller.flux-system.svc.cluster.local./gitrepository/fluxapps/apps/5e3c1f0a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e.tar.gz"
)

var (
	gvrKS   = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gvrGit  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	gvrOCI  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	gvrBkt  = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "buckets"}
	fluxGit = map[string]string{
		"vendor/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: vendor-api
  annotations:
    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent
stringData:
  API_KEY: set-in-the-cluster
  WEBHOOK_SECRET: set-in-the-cluster
`,
		"ledger/externalsecret.yaml": `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: ledger-sync
spec:
  refreshInterval: 1h
  secretStoreRef: {name: vault, kind: SecretStore}
  target: {name: ledger-sync}
  data:
  - {secretKey: LEDGER_USER, remoteRef: {key: demo/LEDGER_USER}}
  - {secretKey: LEDGER_PASS, remoteRef: {key: demo/LEDGER_PASS}}
  - {secretKey: LEDGER_TOKEN, remoteRef: {key: demo/LEDGER_TOKEN}}
`,
		"notify/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: notify-config
stringData:
  SMTP_HOST: ${SMTP_HOST}
  SMTP_PORT: ${SMTP_PORT}
`,
		"assets/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: assets-cdn
stringData:
  CDN_KEY: set-in-the-cluster
`,
	}
	// fluxArtifact is the tar.gz the stand-in serves and its digest.
	fluxArtifact, fluxDigest = tarGz(fluxGit)
)

func fluxPart(now time.Time) (core, dyn []runtime.Object) {
	fresh := now.Add(-10 * time.Minute)
	ready := func() []any {
		return []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
			"message": "Applied revision: " + fluxRevision, "lastTransitionTime": fresh.UTC().Format(time.RFC3339)}}
	}
	dyn = append(dyn, unstr(map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": fluxNS, "name": "apps", "uid": "uid-git-apps", "generation": int64(1)},
		"spec":     map[string]any{"interval": "1m", "url": "https://git.example/platform/apps.git", "ref": map[string]any{"branch": "main"}},
		"status": map[string]any{"observedGeneration": int64(1), "conditions": ready(),
			"artifact": map[string]any{"path": "gitrepository/fluxapps/apps/5e3c1f0a.tar.gz", "url": fluxArtifactURL,
				"revision": fluxRevision, "digest": fluxDigest, "lastUpdateTime": fresh.UTC().Format(time.RFC3339)}},
	}))
	ks := func(name string, spec map[string]any, inventory ...string) {
		spec["interval"] = "10m"
		spec["path"] = "./" + name
		spec["prune"] = true
		spec["sourceRef"] = map[string]any{"kind": "GitRepository", "name": "apps"}
		entries := make([]any, 0, len(inventory))
		for _, id := range inventory {
			entries = append(entries, map[string]any{"id": id, "v": "v1"})
		}
		dyn = append(dyn, unstr(map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"namespace": fluxNS, "name": name, "uid": "uid-ks-" + name, "generation": int64(1)},
			"spec":     spec,
			"status": map[string]any{"observedGeneration": int64(1), "conditions": ready(),
				"lastAppliedRevision": fluxRevision, "lastAttemptedRevision": fluxRevision,
				"inventory": map[string]any{"entries": entries}},
		}))
	}
	ks("vendor", map[string]any{"targetNamespace": fluxNS}, fluxNS+"_vendor-api__Secret")
	ks("ledger", map[string]any{"targetNamespace": fluxNS, "ignore": []any{map[string]any{"paths": []any{"/spec/data"},
		"target": map[string]any{"kind": "ExternalSecret", "name": "ledger-sync"}}}},
		fluxNS+"_ledger-sync_external-secrets.io_ExternalSecret")
	ks("notify", map[string]any{"targetNamespace": fluxNS, "postBuild": map[string]any{
		"substitute":     map[string]any{"SMTP_PORT": "587"},
		"substituteFrom": []any{map[string]any{"kind": "Secret", "name": "notify-vars", "optional": true}}}},
		fluxNS+"_notify-config__Secret")
	ks("assets", map[string]any{"targetNamespace": fluxNS}, fluxNS+"_assets-cdn__Secret")

	hourly := map[string]any{"name": "vault", "kind": "SecretStore"}
	dyn = append(dyn,
		// What Flux applied before the ignore rule: two entries; ESO wrote them.
		externalSecret(fluxNS, "ledger-sync", map[string]any{"secretStoreRef": hourly, "refreshInterval": "1h",
			"target": map[string]any{"name": "ledger-sync"}, "data": esData("LEDGER_USER", "LEDGER_PASS")}, "True", "SecretSynced", fresh),
		store("SecretStore", fluxNS, "vault", map[string]any{"vault": map[string]any{"server": "https://vault.example:8200"}}, "True", "Valid"),
	)
	core = append(core,
		secret(fluxNS, "vendor-api", map[string]string{"API_KEY": "vendor-api-key-1"}, nil),
		secret(fluxNS, "ledger-sync", map[string]string{"LEDGER_USER": "ledger", "LEDGER_PASS": "ledger-pass-2"}, nil),
		// SMTP_PORT defined inline, SMTP_HOST nowhere: it shipped empty.
		secret(fluxNS, "notify-config", map[string]string{"SMTP_HOST": "", "SMTP_PORT": "587"}, nil),
		secret(fluxNS, "assets-cdn", map[string]string{"CDN_KEY": "cdn-key-3"}, nil),
	)
	return core, dyn
}

// tarGz packs files (sorted, fixed times) as source-controller packs an
// artifact, and returns it with its "sha256:<hex>" digest.
func tarGz(files map[string]string) ([]byte, string) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		body := []byte(files[n])
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	_ = zw.Close()
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), "sha256:" + hex.EncodeToString(sum[:])
}

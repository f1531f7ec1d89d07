package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

const (
	fluxNS   = "flux-system"
	argoNS   = "argocd"
	srcHost  = "source-controller." + fluxNS + ".svc.cluster.local." // source-controller's --storage-adv-addr in flux2's install
	newKey   = "NEW_KEY"                                             // the key revision 1 adds to db-0
	driftKey = "PORT"                                                // the key the drifted Secret lacks
)

var (
	esGVR  = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	cssGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}
	gitGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	ksGVR  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	appGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

func sourceName(a int) string { return fmt.Sprintf("app-%03d", a) }
func ksName(a, k int) string  { return fmt.Sprintf("%s-k%d", sourceName(a), k) }
func ksNS(a, k int) string    { return fmt.Sprintf("team-%03d-%d", a, k) }
func ksPrefix(k int) string   { return fmt.Sprintf("k%d-", k) }

// ksSpec is Kustomization k of artifact a's spec (BenchmarkFluxScale's):
// overlay k%5, its own targetNamespace, namePrefix and postBuild.substitute.
func ksSpec(a, k int) map[string]any {
	return map[string]any{"interval": "10m", "path": fmt.Sprintf("./apps/overlays/o%d", k%5), "prune": true,
		"sourceRef":       map[string]any{"kind": "GitRepository", "name": sourceName(a)},
		"targetNamespace": ksNS(a, k), "namePrefix": ksPrefix(k),
		"postBuild": map[string]any{"substitute": map[string]any{"ENV": fmt.Sprintf("env%d", k), "CLUSTER": "prod"}}}
}

// driftedK is, of an artifact's Kustomizations, the one whose Secret db-2
// lacks PORT on the cluster (a driftwatch_gitops_synced_entries_missing
// finding once built): the last by name, so the last of its artifact the
// poller builds (it builds artifact by artifact, by digest, each
// artifact's Kustomizations in name order). With one finding per artifact
// present, every Kustomization has been built.
func driftedK(per int) int {
	names := make([]string, per)
	for k := range names {
		names[k] = ksName(0, k)
	}
	sort.Strings(names)
	var k int
	_, _ = fmt.Sscanf(names[per-1], "app-000-k%d", &k)
	return k
}

// pool runs functions with bounded concurrency and keeps the first error.
type pool struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	err  error
	n    atomic.Int64
}

func newPool(n int) *pool { return &pool{sem: make(chan struct{}, n)} }

func (p *pool) submit(fn func() error) {
	p.sem <- struct{}{}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sem; p.wg.Done() }()
		if err := fn(); err != nil {
			p.once.Do(func() { p.err = err })
		}
		p.n.Add(1)
	}()
}

func (p *pool) wait() error { p.wg.Wait(); return p.err }

// world is what populate created.
type world struct {
	sz      sizes
	per     int
	arts    []artifact // current artifact of each GitRepository
	next    []artifact // revision 1 of the first --revisions artifacts
	objects int
	created time.Duration
	drifted int
}

// value is a distinct, meaningless value (no duplicate-credential findings).
func value(ns, name, key string) []byte { return []byte("v:" + ns + "/" + name + "/" + key) }

func secret(ns, name string, keys []string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = value(ns, name, k)
	}
	return s
}

// externalSecret is a live ExternalSecret (its status is written after).
func externalSecret(ns, name, target string, keys []string, dataFrom bool) *unstructured.Unstructured {
	spec := map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
		"target": map[string]any{"name": target, "creationPolicy": "Owner"}}
	var data []any
	for _, k := range keys {
		data = append(data, map[string]any{"secretKey": k, "remoteRef": map[string]any{"key": ns + "/" + target + "/" + k}})
	}
	if len(data) > 0 {
		spec["data"] = data
	}
	if dataFrom {
		spec["dataFrom"] = []any{map[string]any{"extract": map[string]any{"key": ns + "/" + target}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

// createWithStatus creates obj and then writes status through the status
// subresource (as the controller would).
func createWithStatus(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured, status func(*unstructured.Unstructured) map[string]any) error {
	_, err := createStatus(ctx, r, obj, status)
	return err
}

func createStatus(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured, status func(*unstructured.Unstructured) map[string]any) (*unstructured.Unstructured, error) {
	got, err := r.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = r.Get(ctx, obj.GetName(), metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	got.Object["status"] = status(got)
	if _, err := r.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("%s %s/%s status: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return got, nil
}

// createES creates an ExternalSecret (Ready) and then its target Secret
// with the keys ESO would write and ESO's controller ownerReference
// (creationPolicy Owner: ESO owns what it creates).
func createES(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, es *unstructured.Unstructured, target string, keys []string) error {
	got, err := createStatus(ctx, dyn.Resource(esGVR).Namespace(es.GetNamespace()), es, esReady)
	if err != nil {
		return err
	}
	s := secret(es.GetNamespace(), target, keys)
	yes := true
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: got.GetName(),
		UID: got.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}
	s.Labels = map[string]string{"reconcile.external-secrets.io/created-by": "bench", "reconcile.external-secrets.io/managed": "true"}
	_, err = cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	return err
}

func esReady(*unstructured.Unstructured) map[string]any {
	t := now()
	return map[string]any{"refreshTime": t, "syncedResourceVersion": "1-bench",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced", "message": "secret synced", "lastTransitionTime": t}}}
}

// gitStatus is a GitRepository's status as source-controller writes it.
func gitStatus(a artifact) func(*unstructured.Unstructured) map[string]any {
	return func(u *unstructured.Unstructured) map[string]any {
		t := now()
		msg := "stored artifact for revision '" + a.revision + "'"
		return map[string]any{"observedGeneration": u.GetGeneration(),
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": msg, "lastTransitionTime": t, "observedGeneration": u.GetGeneration()},
				map[string]any{"type": "ArtifactInStorage", "status": "True", "reason": "Succeeded", "message": msg, "lastTransitionTime": t, "observedGeneration": u.GetGeneration()}},
			"artifact": map[string]any{"path": a.path, "url": "http://" + srcHost + "/" + a.path, "revision": a.revision,
				"digest": a.digest, "lastUpdateTime": t, "size": int64(a.size)}}
	}
}

// populate creates the cluster: the ClusterSecretStore, the GitRepositories
// with their artifacts' status, the Kustomizations applied at that revision
// (Ready, inventory) with the Secrets and ExternalSecrets their builds declare
// in their namespaces (the ExternalSecrets' target Secrets too), and the
// Applications with what they manage.
func populate(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, sz sizes, tmp string, src *sourceServer, conc int, logf func(string, ...any)) (*world, error) {
	t0 := time.Now()
	w := &world{sz: sz, per: sz.Kustomizations / sz.Artifacts}
	w.drifted = driftedK(w.per)
	for a := 0; a < sz.Artifacts; a++ {
		art, err := makeArtifact(tmp, a, 0)
		if err != nil {
			return nil, err
		}
		w.arts = append(w.arts, art)
		src.publish(art)
		if a < sz.Revisions {
			nx, err := makeArtifact(tmp, a, 1)
			if err != nil {
				return nil, err
			}
			w.next = append(w.next, nx)
		}
	}
	decl, err := declaredByK(w.per, w.arts[0])
	if err != nil {
		return nil, err
	}
	logf("built %d artifacts (%d B each, compressed) and the %d Kustomizations of one artifact (%d objects each) in %s",
		len(w.arts), w.arts[0].size, w.per, len(decl[0]), time.Since(t0).Round(time.Millisecond))

	t1 := time.Now()
	var objects atomic.Int64
	p := newPool(conc)
	createN := func(n int64, fn func() error) { p.submit(func() error { objects.Add(n); return fn() }) }
	create := func(fn func() error) { createN(1, fn) }
	var nss []string
	for a := 0; a < sz.Artifacts; a++ {
		for k := 0; k < w.per; k++ {
			nss = append(nss, ksNS(a, k))
		}
	}
	for i := 0; i < sz.Applications; i++ {
		nss = append(nss, "team-"+appName(i))
	}
	nss = append(nss, fluxNS, argoNS)
	for _, ns := range nss {
		create(func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	p = newPool(conc)
	create(func() error {
		return createWithStatus(ctx, dyn.Resource(cssGVR), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore", "metadata": map[string]any{"name": "vault"},
			"spec": map[string]any{"provider": map[string]any{"fake": map[string]any{"data": []any{map[string]any{"key": "x", "value": "y"}}}}}}},
			func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"capabilities": "ReadWrite", "conditions": []any{map[string]any{
					"type": "Ready", "status": "True", "reason": "Valid", "message": "store validated", "lastTransitionTime": now()}}}
			})
	})
	// Flux.
	for a := 0; a < sz.Artifacts; a++ {
		art := w.arts[a]
		create(func() error {
			return createWithStatus(ctx, dyn.Resource(gitGVR).Namespace(fluxNS), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
				"metadata": map[string]any{"name": sourceName(a), "namespace": fluxNS},
				"spec": map[string]any{"url": "https://git.example.com/" + sourceName(a) + ".git", "interval": "1m",
					"ref": map[string]any{"branch": "main"}}}}, gitStatus(art))
		})
		for k := 0; k < w.per; k++ {
			ns, pre := ksNS(a, k), ksPrefix(k)
			var inv []any
			add := func(group, version, kind, name string) {
				inv = append(inv, map[string]any{"id": ns + "_" + name + "_" + group + "_" + kind, "v": version})
			}
			for _, o := range decl[k] {
				name, keys := o.Name, o.Keys
				switch o.Kind {
				case "Secret":
					add("", "v1", "Secret", name)
					if k == w.drifted && name == pre+"db-2" {
						keys = without(keys, driftKey)
					}
					create(func() error {
						_, err := cs.CoreV1().Secrets(ns).Create(ctx, secret(ns, name, keys), metav1.CreateOptions{})
						return err
					})
				case "ExternalSecret":
					add("external-secrets.io", "v1", "ExternalSecret", name)
					target, dataKeys, dataFrom := name, []string(nil), false
					if o.ES != nil {
						target, dataKeys, dataFrom = o.ES.Target, o.ES.DataKeys, o.ES.DataFrom > 0
					}
					tkeys := append([]string(nil), dataKeys...)
					if dataFrom {
						tkeys = append(tkeys, "EXTRACTED_1", "EXTRACTED_2")
					}
					createN(2, func() error {
						return createES(ctx, cs, dyn, externalSecret(ns, name, target, dataKeys, dataFrom), target, tkeys)
					})
				}
			}
			add("", "v1", "ConfigMap", pre+"cfg")
			add("apps", "v1", "Deployment", pre+"web")
			name, rev := ksName(a, k), art.revision
			create(func() error {
				return createWithStatus(ctx, dyn.Resource(ksGVR).Namespace(fluxNS), &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
					"metadata": map[string]any{"name": name, "namespace": fluxNS}, "spec": ksSpec(a, k)}},
					func(u *unstructured.Unstructured) map[string]any {
						t := now()
						return map[string]any{"observedGeneration": u.GetGeneration(), "lastAppliedRevision": rev, "lastAttemptedRevision": rev,
							"lastHandledReconcileAt": t, "inventory": map[string]any{"entries": inv},
							"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
								"message": "Applied revision: " + rev, "lastTransitionTime": t, "observedGeneration": u.GetGeneration()}}}
					})
			})
		}
	}
	// Argo CD.
	for i := 0; i < sz.Applications; i++ {
		app, managed := application(i)
		ns := "team-" + appName(i)
		for _, m := range managed {
			if m.es {
				createN(2, func() error {
					return createES(ctx, cs, dyn, externalSecret(ns, m.name, m.name, m.keys, false), m.name, m.secretKeys)
				})
				continue
			}
			create(func() error {
				_, err := cs.CoreV1().Secrets(ns).Create(ctx, secret(ns, m.name, m.secretKeys), metav1.CreateOptions{})
				return err
			})
		}
		create(func() error {
			_, err := dyn.Resource(appGVR).Namespace(argoNS).Create(ctx, app, metav1.CreateOptions{})
			return err
		})
	}
	err = p.wait()
	w.objects = int(objects.Load())
	w.created = time.Since(t1)
	return w, err
}

func without(keys []string, drop string) []string {
	var out []string
	for _, k := range keys {
		if k != drop {
			out = append(out, k)
		}
	}
	return out
}

// managedObj is a Secret, or an ExternalSecret and its target Secret, an
// Application manages.
type managedObj struct {
	name       string
	es         bool
	keys       []string // the ExternalSecret's secretKeys
	secretKeys []string // the Secret's keys on the cluster
}

// application is Application i (internal/agent's BenchmarkScrapeArgoCD
// layout, buildArgoCluster): in argocd, deploying to its own namespace 2
// Secrets and 2 ExternalSecrets (with their targets), a Deployment and a
// Service; automated with selfHeal, ServerSideApply; one in five with
// ignoreDifferences on the ExternalSecrets' data (jqPathExpressions) and on
// a Secret (jsonPointers) and RespectIgnoreDifferences=true; one in twenty
// OutOfSync at a newer revision; one in fifty with a Secret lacking a key.
// Its status is what the application-controller writes: sync, health,
// resources, history, operationState with the sync result.
func application(i int) (*unstructured.Unstructured, []managedObj) {
	name := appName(i)
	ns := "team-" + name
	t0 := time.Now().UTC().Add(-time.Hour)
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
	rev := fmt.Sprintf("%040x", 1000+i)
	var resources, synced []any
	var managed []managedObj
	res := func(group, kind, obj string) {
		r := map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": ns, "name": obj, "status": "Synced"}
		if kind == "Deployment" || kind == "Service" {
			r["health"] = map[string]any{"status": "Healthy"}
		}
		resources = append(resources, r)
		synced = append(synced, map[string]any{"group": group, "version": "v1", "kind": kind, "namespace": ns, "name": obj,
			"status": "Synced", "message": kind + " " + obj + " serverside-applied", "hookPhase": "Running", "syncPhase": "Sync"})
	}
	for j := 0; j < 2; j++ {
		keys := []string{"USER", "PASSWORD", "URL"}
		if j == 1 && i%50 == 0 {
			keys = keys[:2]
		}
		managed = append(managed, managedObj{name: fmt.Sprintf("creds-%d", j), secretKeys: keys})
		res("", "Secret", fmt.Sprintf("creds-%d", j))
		esKeys := []string{"A", "B", "C", "D", "E"}
		managed = append(managed, managedObj{name: fmt.Sprintf("ext-%d", j), es: true, keys: esKeys, secretKeys: esKeys})
		res("external-secrets.io", "ExternalSecret", fmt.Sprintf("ext-%d", j))
	}
	res("apps", "Deployment", "web")
	res("", "Service", "web")
	opts := []any{"CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"}
	spec := map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "apps/" + name, "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
		"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}, "syncOptions": opts,
			"retry": map[string]any{"limit": int64(5), "backoff": map[string]any{"duration": "5s", "factor": int64(2), "maxDuration": "3m"}}}}
	if i%5 == 0 {
		spec["syncPolicy"].(map[string]any)["syncOptions"] = append(opts, "RespectIgnoreDifferences=true")
		spec["ignoreDifferences"] = []any{
			map[string]any{"group": "external-secrets.io", "kind": "ExternalSecret", "jqPathExpressions": []any{".spec.data[].remoteRef.conversionStrategy"}},
			map[string]any{"kind": "Secret", "name": "creds-1", "jsonPointers": []any{"/data/URL"}},
		}
	}
	status, syncRev := "Synced", rev
	if i%20 == 0 {
		status, syncRev = "OutOfSync", fmt.Sprintf("%040x", 900000+i)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": argoNS,
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
			"labels":     map[string]any{"team": fmt.Sprintf("t%d", i%10)}},
		"spec": spec,
		"status": map[string]any{
			"sync":      map[string]any{"status": status, "revision": syncRev, "comparedTo": map[string]any{"source": spec["source"], "destination": spec["destination"]}},
			"health":    map[string]any{"status": "Healthy", "lastTransitionTime": ts(0)},
			"resources": resources, "reconciledAt": ts(50 * time.Minute), "sourceType": "Directory",
			"summary": map[string]any{"images": []any{"registry.example.com/" + name + ":1.0"}},
			"history": []any{map[string]any{"id": int64(1), "revision": rev, "deployedAt": ts(time.Minute), "deployStartedAt": ts(0),
				"source": spec["source"]}},
			"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)",
				"startedAt": ts(0), "finishedAt": ts(time.Minute),
				"operation": map[string]any{"sync": map[string]any{"revision": rev}, "initiatedBy": map[string]any{"automated": true},
					"retry": map[string]any{"limit": int64(5)}},
				"syncResult": map[string]any{"revision": rev, "source": spec["source"], "resources": synced}},
		},
	}}, managed
}

func appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// syncTo records on an Application what a successful automated sync to rev
// writes: sync status Synced at rev, operationState at rev (finished now),
// one more history entry.
func syncTo(app *unstructured.Unstructured, rev string) {
	st, _ := app.Object["status"].(map[string]any)
	if st == nil {
		return
	}
	t := now()
	if sy, ok := st["sync"].(map[string]any); ok {
		sy["status"], sy["revision"] = "Synced", rev
	}
	if op, ok := st["operationState"].(map[string]any); ok {
		op["phase"], op["startedAt"], op["finishedAt"] = "Succeeded", t, t
		if o, ok := op["operation"].(map[string]any); ok {
			o["sync"] = map[string]any{"revision": rev}
		}
		if sr, ok := op["syncResult"].(map[string]any); ok {
			sr["revision"] = rev
		}
	}
	h, _ := st["history"].([]any)
	st["history"] = append(h, map[string]any{"id": int64(len(h) + 1), "revision": rev, "deployedAt": t, "deployStartedAt": t,
		"source": map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "apps/" + app.GetName(), "targetRevision": "main"}})
	st["reconciledAt"] = t
}

package transform

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/internal/model"
)

// appBenchJSON is Application i as the apiserver serves it to the dynamic
// informer: automated with selfHeal and three syncOptions, a retry policy;
// status with sync, health, history, an operationState whose syncResult lists
// its six resources, and those six resources (2 Secrets, 2 ExternalSecrets, a
// Deployment, a Service) in status.resources; one in five with two
// ignoreDifferences entries and RespectIgnoreDifferences=true; one in twenty
// OutOfSync at a newer revision; two managedFields entries.
func appBenchJSON(i int) []byte {
	name := fmt.Sprintf("app-%04d", i)
	ns := "team-" + name
	rev := fmt.Sprintf("%040x", 1000+i)
	ts := "2026-12-03T10:00:00Z"
	var resources, synced []any
	for _, r := range [][3]string{{"", "Secret", "creds-0"}, {"", "Secret", "creds-1"}, {"external-secrets.io", "ExternalSecret", "ext-0"},
		{"external-secrets.io", "ExternalSecret", "ext-1"}, {"apps", "Deployment", "web"}, {"", "Service", "web"}} {
		resources = append(resources, map[string]any{"group": r[0], "version": "v1", "kind": r[1], "namespace": ns, "name": r[2], "status": "Synced",
			"health": map[string]any{"status": "Healthy"}})
		synced = append(synced, map[string]any{"group": r[0], "version": "v1", "kind": r[1], "namespace": ns, "name": r[2], "status": "Synced",
			"message": r[1] + " serverside-applied", "hookPhase": "Running", "syncPhase": "Sync"})
	}
	source := map[string]any{"repoURL": "https://git.example.com/apps.git", "path": "apps/" + name, "targetRevision": "main"}
	dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}
	opts := []any{"CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"}
	spec := map[string]any{"project": "default", "source": source, "destination": dest,
		"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}, "syncOptions": opts,
			"retry": map[string]any{"limit": 5, "backoff": map[string]any{"duration": "5s", "factor": 2, "maxDuration": "3m"}}}}
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
	obj := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": fmt.Sprintf("6f1c2a9e-8d7b-4c55-9a0e-%012d", i),
			"resourceVersion": strconv.Itoa(100000 + i), "generation": 3, "creationTimestamp": ts,
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"}, "labels": map[string]any{"team": fmt.Sprintf("t%d", i%10)},
			"managedFields": []any{
				map[string]any{"apiVersion": "argoproj.io/v1alpha1", "fieldsType": "FieldsV1", "manager": "kubectl", "operation": "Apply", "time": ts,
					"fieldsV1": map[string]any{"f:spec": map[string]any{"f:project": map[string]any{}, "f:source": map[string]any{}, "f:syncPolicy": map[string]any{}}}},
				map[string]any{"apiVersion": "argoproj.io/v1alpha1", "fieldsType": "FieldsV1", "manager": "argocd-application-controller", "operation": "Update", "time": ts,
					"fieldsV1": map[string]any{"f:status": map[string]any{".": map[string]any{}, "f:health": map[string]any{}, "f:sync": map[string]any{}}}},
			}},
		"spec": spec,
		"status": map[string]any{
			"sync":      map[string]any{"status": status, "revision": syncRev, "comparedTo": map[string]any{"source": source, "destination": dest}},
			"health":    map[string]any{"status": "Healthy", "lastTransitionTime": ts},
			"resources": resources, "reconciledAt": ts, "sourceType": "Directory",
			"summary": map[string]any{"images": []any{"registry.example.com/" + name + ":1.0"}},
			"history": []any{map[string]any{"id": 1, "revision": rev, "deployedAt": ts, "deployStartedAt": ts, "source": source}},
			"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)", "startedAt": ts, "finishedAt": ts,
				"operation":  map[string]any{"sync": map[string]any{"revision": rev}, "initiatedBy": map[string]any{"automated": true}},
				"syncResult": map[string]any{"revision": rev, "source": source, "resources": synced}},
		},
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkApplicationScale runs N Applications (decoded from JSON as the
// dynamic informer does, so no string is shared between them) through the
// real Application transform into the model Store (Store.UpsertApp), as the
// informer's handler does. It reports ns/app (transform and upsert, not the
// JSON decoding) and heap-B/app: the live heap the records and the Store keep
// once the decoded objects are gone, after GC. Sizes 100, 1,000, 2,000:
//
//	go test -run '^$' -bench ApplicationScale -benchmem ./internal/transform/
func BenchmarkApplicationScale(b *testing.B) {
	for _, n := range []int{100, 1000, 2000} {
		raw := make([][]byte, n)
		for i := range raw {
			raw[i] = appBenchJSON(i)
		}
		b.Run("apps="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var heap float64
			var keep []any
			for b.Loop() {
				b.StopTimer()
				objs := make([]*unstructured.Unstructured, n)
				for i, r := range raw {
					objs[i] = &unstructured.Unstructured{}
					if err := objs[i].UnmarshalJSON(r); err != nil {
						b.Fatal(err)
					}
				}
				before := benchLiveHeap()
				tr := newTransformer()
				store := model.NewStore(nil)
				recs := make([]any, n) // the informer's indexer
				b.StartTimer()
				for i, o := range objs {
					rec, err := tr.Application(o)
					if err != nil {
						b.Fatal(err)
					}
					store.UpsertApp(rec.(*model.ArgoApp))
					recs[i] = rec
				}
				b.StopTimer()
				// objs is dead from here (the compiler's liveness): the
				// decoded objects are garbage for the reading below.
				keep = []any{tr, store, recs}
				after := benchLiveHeap()
				// before held the decoded objects, after does not: add them back.
				heap = float64(int64(after)-int64(before)+int64(unstructuredHeap(b, raw))) / float64(n)
				b.StartTimer()
			}
			runtime.KeepAlive(keep)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/app")
			b.ReportMetric(heap, "heap-B/app")
		})
	}
}

var unstructuredHeapCache = map[int]uint64{}

// unstructuredHeap is the live heap the decoded objects of raw take.
func unstructuredHeap(b *testing.B, raw [][]byte) uint64 {
	if h, ok := unstructuredHeapCache[len(raw)]; ok {
		return h
	}
	before := benchLiveHeap()
	objs := make([]*unstructured.Unstructured, len(raw))
	for i, r := range raw {
		objs[i] = &unstructured.Unstructured{}
		if err := objs[i].UnmarshalJSON(r); err != nil {
			b.Fatal(err)
		}
	}
	after := benchLiveHeap()
	runtime.KeepAlive(objs)
	unstructuredHeapCache[len(raw)] = after - before
	return after - before
}

func benchLiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

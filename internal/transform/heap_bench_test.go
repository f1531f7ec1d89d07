package transform

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/helmpayload"
	"github.com/driftwatch/driftwatch/internal/model"
)

// BenchmarkModelHeap measures the steady live heap the agent keeps per object: the
// objects of a synthetic cluster shaped like test/bench/populate.go's (Secrets with
// 5 keys × 64 random bytes, 20 % with a kubectl last-applied annotation carrying
// the data; pods with two env secretKeyRefs, an envFrom and a secret volume;
// ExternalSecrets with 5 data entries and a Ready status; Helm release Secrets;
// 200 namespaces) are encoded and decoded as the apiserver and client-go would
// (protobuf for core kinds, JSON for ExternalSecrets, so no string is shared between
// objects unless the agent shares it), run through the real transforms into
// informer-like indexers and the model Store, and the live heap after a forced GC is
// compared with what it was before.
//
// Rows:
//   - floor: the indexers holding name/namespace-only objects, like the test/bench
//     "baseline --transform" informers.
//   - agent: the indexers holding the records plus the model Store.
//
// Both report live bytes per Secret+Pod; agent also reports over_floor_B/obj, the
// figure the performance budget (≤ 1 KiB) is stated in.
//
// The default size is a tenth of the issue's; the full size (20k Secrets, 10k Pods,
// 5k ExternalSecrets, 1k Helm releases) is
//
//	DRIFTWATCH_HEAP_SCALE=1 go test -run '^$' -bench ModelHeap -benchtime 1x ./internal/transform/
//
// DRIFTWATCH_HEAP_PROFILE=file also writes the agent row's heap profile there.
func BenchmarkModelHeap(b *testing.B) {
	if os.Getenv("DRIFTWATCH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096 // finer than the default 512 KiB
	}
	scale := 0.1
	if s := os.Getenv("DRIFTWATCH_HEAP_SCALE"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			b.Fatalf("DRIFTWATCH_HEAP_SCALE=%q: want a positive number", s)
		}
		scale = f
	}
	sz := heapSizes{Secrets: int(20000 * scale), Pods: int(10000 * scale), ES: int(5000 * scale),
		Helm: int(1000 * scale), Namespaces: 200}
	var floor float64
	for _, mode := range []string{"floor", "agent"} {
		b.Run(mode, func(b *testing.B) {
			var perObj float64
			for i := 0; i < b.N; i++ {
				perObj = measureHeap(b, sz, mode == "agent")
			}
			b.ReportMetric(perObj, "live_B/obj")
			b.ReportMetric(perObj*float64(sz.Secrets+sz.Pods)/(1<<20), "live_MiB")
			if mode == "floor" {
				floor = perObj
			} else if floor > 0 {
				b.ReportMetric(perObj-floor, "over_floor_B/obj")
			}
		})
	}
}

type heapSizes struct{ Secrets, Pods, ES, Helm, Namespaces int }

// wireObjects are the encoded objects, as the apiserver would send them.
type wireObjects struct {
	secrets, pods, helm [][]byte // protobuf
	es                  [][]byte // JSON
}

var heapWire struct {
	sz heapSizes
	w  *wireObjects
}

func measureHeap(b *testing.B, sz heapSizes, agent bool) float64 {
	b.Helper()
	if heapWire.w == nil || heapWire.sz != sz {
		heapWire.sz, heapWire.w = sz, buildWire(b, sz)
	}
	w := heapWire.w
	b.StopTimer()
	runtime.GC()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.StartTimer()

	tr := &Transformer{FP: model.NewFingerprinter()}
	store := model.NewStore(nil)
	newIdx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	idx := [4]cache.Indexer{newIdx(), newIdx(), newIdx(), newIdx()}
	now := time.Now()
	floorOf := func(obj any) any {
		m, err := meta.Accessor(obj)
		if err != nil {
			b.Fatal(err)
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace()}}
	}
	add := func(i int, obj any, tf func(any) (any, error), upsert func(any)) {
		var rec any
		if agent {
			var err error
			if rec, err = tf(obj); err != nil {
				b.Fatal(err)
			}
			upsert(rec)
		} else {
			rec = floorOf(obj)
		}
		if err := idx[i].Add(rec); err != nil {
			b.Fatal(err)
		}
	}
	for _, raw := range w.secrets {
		s := &corev1.Secret{}
		if err := s.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		add(0, s, tr.Secret, func(r any) { store.UpsertSecret(r.(*model.Secret), now) })
	}
	for _, raw := range w.pods {
		p := &corev1.Pod{}
		if err := p.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		add(1, p, tr.Pod, func(r any) { store.UpsertPod(r.(*model.Pod)) })
	}
	for _, raw := range w.es {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			b.Fatal(err)
		}
		add(2, u, tr.ExternalSecret, func(r any) {
			e := r.(*model.ExternalSecret)
			if e.DecodeErr != "" || e.Ready.Status != "True" {
				b.Fatalf("ExternalSecret %s: %q, Ready %q", e.Name, e.DecodeErr, e.Ready.Status)
			}
			store.UpsertExternalSecret(e, time.Time{})
		})
	}
	for _, raw := range w.helm {
		s := &corev1.Secret{}
		if err := s.Unmarshal(raw); err != nil {
			b.Fatal(err)
		}
		add(3, s, tr.HelmRelease, func(r any) {
			h := r.(*model.HelmRelease)
			if h.DecodeErr != "" || len(h.Expectations) != 2 {
				b.Fatalf("helm release %s: %q, %d expectations", h.Name, h.DecodeErr, len(h.Expectations))
			}
			store.UpsertHelmRelease(h)
		})
	}
	// The model's sorted lists are built at the first scrape and kept.
	store.Read(func(v model.View) { v.Secrets(); v.Pods(); v.ExternalSecrets() })

	b.StopTimer()
	runtime.GC()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if f := os.Getenv("DRIFTWATCH_HEAP_PROFILE"); f != "" && agent {
		// go tool pprof -sample_index=inuse_space $f
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(out); err != nil {
			b.Fatal(err)
		}
		_ = out.Close()
	}
	runtime.KeepAlive(idx)
	runtime.KeepAlive(store)
	runtime.KeepAlive(tr)
	b.StartTimer()
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(sz.Secrets+sz.Pods)
}

func benchKey(i int) string { return fmt.Sprintf("KEY_%02d", i) }

func benchRand(r *rand.Rand, n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[r.IntN(len(alphabet))]
	}
	return out
}

// serverMeta fills what the apiserver adds to every object.
func serverMeta(m *metav1.ObjectMeta, r *rand.Rand, rv int, manager, opApiVersion string, fields any) {
	m.UID = types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint32()&0xffff, r.Uint64()&0xffffffffffff))
	m.ResourceVersion = strconv.Itoa(rv)
	m.CreationTimestamp = metav1.NewTime(time.Unix(1767225600+int64(rv), 0))
	raw, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	t := metav1.NewTime(m.CreationTimestamp.Time)
	m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: opApiVersion, Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}}
}

func buildWire(b *testing.B, sz heapSizes) *wireObjects {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	w := &wireObjects{}
	ns := func(i int) string { return fmt.Sprintf("bench-%04d", i%sz.Namespaces) }
	secretName := func(i int) string { return fmt.Sprintf("app-%05d", i) }
	rv := 1000
	secretsPerNS := make([][]int, sz.Namespaces)
	for i := 0; i < sz.Secrets; i++ {
		secretsPerNS[i%sz.Namespaces] = append(secretsPerNS[i%sz.Namespaces], i)
		data := map[string][]byte{}
		fdata := map[string]any{".": map[string]any{}}
		for k := 0; k < 5; k++ {
			data[benchKey(k)] = benchRand(r, 64)
			fdata["f:"+benchKey(k)] = map[string]any{}
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName(i), Namespace: ns(i),
				Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%50), "app.kubernetes.io/part-of": "bench"}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		fmeta := map[string]any{"f:labels": map[string]any{".": map[string]any{},
			"f:app.kubernetes.io/name": map[string]any{}, "f:app.kubernetes.io/part-of": map[string]any{}}}
		if r.Float64() < 0.2 {
			la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
				"metadata": map[string]any{"name": s.Name, "namespace": s.Namespace, "annotations": map[string]string{}}, "data": data})
			s.Annotations = map[string]string{model.AnnLastApplied: string(la)}
			fmeta["f:annotations"] = map[string]any{".": map[string]any{}, "f:" + model.AnnLastApplied: map[string]any{}}
		}
		rv++
		serverMeta(&s.ObjectMeta, r, rv, "kubectl-client-side-apply", "v1",
			map[string]any{"f:data": fdata, "f:metadata": fmeta, "f:type": map[string]any{}})
		raw, err := s.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		w.secrets = append(w.secrets, raw)
	}
	for i := 0; i < sz.Pods; i++ {
		nsi := i % sz.Namespaces
		pick := func(j int) string {
			l := secretsPerNS[nsi]
			if len(l) == 0 {
				return "absent"
			}
			return secretName(l[(i/sz.Namespaces+j)%len(l)])
		}
		opt := true
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: ns(i),
				Labels:      map[string]string{"app": fmt.Sprintf("web-%d", i%50), "pod-template-hash": "5d8f9c7b6d"},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
			Spec: corev1.PodSpec{
				ServiceAccountName: "default",
				Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/team/app:1.2.3",
					Env: []corev1.EnvVar{
						{Name: "LOG_LEVEL", Value: "info"},
						{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(0)}, Key: benchKey(r.IntN(5)), Optional: &opt}}},
						{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(1)}, Key: benchKey(0)}}},
					},
					EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pick(2)}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pick(3)}}}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
		}
		rv++
		serverMeta(&p.ObjectMeta, r, rv, "bench", "v1", map[string]any{"f:metadata": map[string]any{},
			"f:spec": map[string]any{"f:containers": map[string]any{}, "f:volumes": map[string]any{}}})
		raw, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		w.pods = append(w.pods, raw)
	}
	for i := 0; i < sz.ES; i++ {
		l := secretsPerNS[i%sz.Namespaces]
		target := secretName(l[(i/sz.Namespaces)%len(l)])
		var data []any
		for k := 0; k < 5; k++ {
			data = append(data, map[string]any{"secretKey": benchKey(k), "remoteRef": map[string]any{"key": fmt.Sprintf("prod/%s/%d", target, k)}})
		}
		rv++
		ts := time.Unix(1767225600+int64(rv), 0).UTC().Format(time.RFC3339)
		es := map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": fmt.Sprintf("es-%05d", i), "namespace": ns(i), "generation": 1,
				"uid": fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff), "resourceVersion": strconv.Itoa(rv),
				"creationTimestamp": ts,
				"managedFields": []any{
					map[string]any{"manager": "bench", "operation": "Update", "apiVersion": "external-secrets.io/v1", "time": ts,
						"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{".": map[string]any{},
							"f:data": map[string]any{}, "f:refreshInterval": map[string]any{}, "f:secretStoreRef": map[string]any{},
							"f:target": map[string]any{}}}},
					map[string]any{"manager": "bench", "operation": "Update", "apiVersion": "external-secrets.io/v1", "time": ts,
						"fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": map[string]any{"f:status": map[string]any{}}},
				}},
			"spec": map[string]any{
				"refreshInterval": "1h",
				"secretStoreRef":  map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
				"target":          map[string]any{"name": target, "creationPolicy": "Owner", "deletionPolicy": "Retain"},
				"data":            data,
			},
			"status": map[string]any{
				"refreshTime": ts, "syncedResourceVersion": "1-bench", "binding": map[string]any{"name": target},
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced",
					"message": "secret synced", "lastTransitionTime": ts}},
			},
		}
		raw, err := json.Marshal(es)
		if err != nil {
			b.Fatal(err)
		}
		w.es = append(w.es, raw)
	}
	for i := 0; i < sz.Helm; i++ {
		name := fmt.Sprintf("rel-%04d", i)
		payload := benchHelmPayload(b, name, ns(i))
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v3", Namespace: ns(i),
				Labels: map[string]string{"owner": "helm", "status": "deployed", "name": name, "version": "3"}},
			Type: HelmReleaseType,
			Data: map[string][]byte{"release": payload},
		}
		rv++
		serverMeta(&s.ObjectMeta, r, rv, "helm", "v1", map[string]any{"f:data": map[string]any{}})
		raw, err := s.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		w.helm = append(w.helm, raw)
	}
	return w
}

// benchHelmPayload encodes a release with a Secret and an ExternalSecret in its
// manifest as Helm v3 does: base64(gzip(JSON)).
func benchHelmPayload(_ *testing.B, name, ns string) []byte {
	manifest := fmt.Sprintf(`---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s-config
type: Opaque
data:
  DATABASE_URL: ZGF0YWJhc2U=
  REDIS_URL: cmVkaXM=
  SESSION_KEY: c2Vzc2lvbg==
---
# Source: app/templates/externalsecret.yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: %[1]s-vault
spec:
  refreshInterval: 1h
  secretStoreRef: {name: vault, kind: ClusterSecretStore}
  target: {name: %[1]s-vault}
  data:
  - {secretKey: API_TOKEN, remoteRef: {key: prod/%[1]s/api-token}}
  - {secretKey: SIGNING_KEY, remoteRef: {key: prod/%[1]s/signing-key}}
`, name)
	return helmpayload.Release{Name: name, Namespace: ns, Version: 3, Manifest: manifest,
		Chart: map[string]any{"metadata": map[string]any{"name": "app", "version": "1.4.2"}}}.Payload()
}

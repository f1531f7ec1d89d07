package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var esGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}

// sizes is the synthetic cluster's shape.
type sizes struct {
	Secrets, KeysPerSecret, ValueSize   int
	Pods, ExternalSecrets, HelmReleases int
	Namespaces                          int
	LastAppliedFrac, BrokenFrac         float64
}

func (s sizes) String() string {
	return fmt.Sprintf("%d Secrets (%d keys × %d B), %d Pods, %d ExternalSecrets, %d Helm releases, %d namespaces, %.0f%% with last-applied, %.1f%% of pods with a missing key",
		s.Secrets, s.KeysPerSecret, s.ValueSize, s.Pods, s.ExternalSecrets, s.HelmReleases, s.Namespaces, 100*s.LastAppliedFrac, 100*s.BrokenFrac)
}

// world is what populate created; the load and the probes work on it.
type world struct {
	namespaces []string
	secrets    [][2]string // namespace, name of every ordinary Secret
	probeNS    string
	probeName  string
	objects    int
	created    time.Duration
}

func nsName(i int) string { return fmt.Sprintf("bench-%04d", i) }

func secretName(i int) string { return fmt.Sprintf("app-%05d", i) }

func keyName(i int) string { return fmt.Sprintf("KEY_%02d", i) }

// pool runs jobs with bounded concurrency and stops at the first error.
type pool struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	mu   sync.Mutex
	err  error
	done atomic.Int64
}

func newPool(n int) *pool { return &pool{sem: make(chan struct{}, n)} }

func (p *pool) submit(f func() error) {
	p.mu.Lock()
	failed := p.err != nil
	p.mu.Unlock()
	if failed {
		return
	}
	p.sem <- struct{}{}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sem; p.wg.Done() }()
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if err = f(); err == nil || apierrors.IsAlreadyExists(err) {
				p.done.Add(1)
				return
			}
			if !apierrors.IsServerTimeout(err) && !apierrors.IsTooManyRequests(err) && !apierrors.IsTimeout(err) && !strings.Contains(err.Error(), "connection") {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
		}
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
	}()
}

func (p *pool) wait() error { p.wg.Wait(); return p.err }

func randBytes(r *rand.Rand, n int) []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// populate creates the synthetic cluster. Secret i lives in namespace i%Namespaces;
// pods, ExternalSecrets and Helm releases reference Secrets of their namespace.
func populate(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, sz sizes, conc int, logf func(string, ...any)) (*world, error) {
	t0 := time.Now()
	w := &world{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < sz.Namespaces; i++ {
		w.namespaces = append(w.namespaces, nsName(i))
	}
	p := newPool(conc)
	for _, ns := range w.namespaces {
		p.submit(func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("namespaces: %w", err)
	}
	// Pods need their namespace's "default" ServiceAccount (admission), which
	// the controller-manager creates shortly after the namespace: at a
	// thousand namespaces the Secrets are created before it has caught up.
	want := map[string]bool{}
	for _, ns := range w.namespaces {
		want[ns] = true
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		l, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
		if err != nil {
			return nil, fmt.Errorf("default ServiceAccounts: %w", err)
		}
		n := 0
		for _, sa := range l.Items {
			if want[sa.Namespace] {
				n++
			}
		}
		if n == len(want) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("default ServiceAccounts: %d of %d namespaces have one after 5 minutes", n, len(want))
		}
		time.Sleep(time.Second)
	}
	progress := func(what string, p *pool, total int) func() {
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					logf("  %s: %d/%d", what, p.done.Load(), total)
				}
			}
		}()
		return func() { close(stop) }
	}

	// Secrets.
	secretsPerNS := make([][]int, sz.Namespaces)
	p = newPool(conc)
	stop := progress("secrets", p, sz.Secrets)
	for i := 0; i < sz.Secrets; i++ {
		ns := w.namespaces[i%sz.Namespaces]
		secretsPerNS[i%sz.Namespaces] = append(secretsPerNS[i%sz.Namespaces], i)
		data := map[string][]byte{}
		for k := 0; k < sz.KeysPerSecret; k++ {
			data[keyName(k)] = randBytes(r, sz.ValueSize)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName(i), Namespace: ns,
				Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%50), "app.kubernetes.io/part-of": "bench"}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		if r.Float64() < sz.LastAppliedFrac {
			la, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
				"metadata": map[string]any{"name": s.Name, "namespace": ns, "annotations": map[string]string{}}, "data": data})
			s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(la)}
		}
		w.secrets = append(w.secrets, [2]string{ns, s.Name})
		p.submit(func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
			return err
		})
	}
	err := p.wait()
	stop()
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	logf("created %d Secrets in %s", sz.Secrets, time.Since(t0).Round(time.Millisecond))

	// Pods: one container with env secretKeyRefs, an envFrom and a secret volume,
	// each pointing at Secrets of the pod's namespace.
	t1 := time.Now()
	p = newPool(conc)
	stop = progress("pods", p, sz.Pods)
	for i := 0; i < sz.Pods; i++ {
		nsi := i % sz.Namespaces
		ns := w.namespaces[nsi]
		pick := func(j int) string {
			l := secretsPerNS[nsi]
			if len(l) == 0 {
				return "absent"
			}
			return secretName(l[(i/sz.Namespaces+j)%len(l)])
		}
		key := keyName(r.IntN(max(sz.KeysPerSecret, 1)))
		if r.Float64() < sz.BrokenFrac {
			key = "NOT_THERE"
		}
		opt := true
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: ns,
				Labels:      map[string]string{"app": fmt.Sprintf("web-%d", i%50), "pod-template-hash": "5d8f9c7b6d"},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/team/app:1.2.3",
					Ports: []corev1.ContainerPort{{ContainerPort: 8080, Name: "http"}},
					Env: []corev1.EnvVar{
						{Name: "LOG_LEVEL", Value: "info"},
						{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(0)}, Key: key, Optional: &opt}}},
						{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(1)}, Key: keyName(0)}}},
					},
					EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pick(2)}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				}},
				Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pick(3)}}}},
			},
		}
		p.submit(func() error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	err = p.wait()
	stop()
	if err != nil {
		return nil, fmt.Errorf("pods: %w", err)
	}
	logf("created %d Pods in %s", sz.Pods, time.Since(t1).Round(time.Millisecond))

	// ExternalSecrets targeting Secrets of their namespace, with a Ready status.
	t2 := time.Now()
	p = newPool(conc)
	stop = progress("externalsecrets", p, sz.ExternalSecrets)
	for i := 0; i < sz.ExternalSecrets; i++ {
		nsi := i % sz.Namespaces
		ns := w.namespaces[nsi]
		l := secretsPerNS[nsi]
		target := secretName(l[(i/sz.Namespaces)%len(l)])
		var data []any
		for k := 0; k < sz.KeysPerSecret; k++ {
			data = append(data, map[string]any{"secretKey": keyName(k), "remoteRef": map[string]any{"key": fmt.Sprintf("prod/%s/%d", target, k)}})
		}
		es := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": fmt.Sprintf("es-%05d", i), "namespace": ns},
			"spec": map[string]any{
				"refreshInterval": "1h",
				"secretStoreRef":  map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
				"target":          map[string]any{"name": target, "creationPolicy": "Owner"},
				"data":            data,
			},
		}}
		p.submit(func() error {
			obj, err := dyn.Resource(esGVR).Namespace(ns).Create(ctx, es, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				obj, err = dyn.Resource(esGVR).Namespace(ns).Get(ctx, es.GetName(), metav1.GetOptions{})
			}
			if err != nil {
				return err
			}
			now := time.Now().UTC().Format(time.RFC3339)
			obj.Object["status"] = map[string]any{
				"refreshTime":           now,
				"syncedResourceVersion": "1-bench",
				"binding":               map[string]any{"name": target},
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "SecretSynced",
					"message": "secret synced", "lastTransitionTime": now}},
			}
			_, err = dyn.Resource(esGVR).Namespace(ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
			return err
		})
	}
	err = p.wait()
	stop()
	if err != nil {
		return nil, fmt.Errorf("externalsecrets: %w", err)
	}
	logf("created %d ExternalSecrets (with status) in %s", sz.ExternalSecrets, time.Since(t2).Round(time.Millisecond))

	// Helm release Secrets with a rendered chart (Deployment, Service, ConfigMap, Secret, ExternalSecret).
	t3 := time.Now()
	p = newPool(conc)
	for i := 0; i < sz.HelmReleases; i++ {
		ns := w.namespaces[i%sz.Namespaces]
		name := fmt.Sprintf("rel-%04d", i)
		payload, err := helmPayload(name, ns, r)
		if err != nil {
			return nil, err
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v3", Namespace: ns,
				Labels: map[string]string{"owner": "helm", "status": "deployed", "name": name, "version": "3"}},
			Type: "helm.sh/release.v1",
			Data: map[string][]byte{"release": payload},
		}
		p.submit(func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	logf("created %d Helm release Secrets in %s", sz.HelmReleases, time.Since(t3).Round(time.Millisecond))

	// The probe: a pod reads PROBE optionally from a Secret that has it; the bench
	// toggles the key and times the missing_key series.
	w.probeNS, w.probeName = w.namespaces[0], "latency-probe"
	if _, err := cs.CoreV1().Secrets(w.probeNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: w.probeName, Namespace: w.probeNS},
		Data:       map[string][]byte{"PROBE": []byte("x"), "OTHER": []byte("y")},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	opt := true
	if _, err := cs.CoreV1().Pods(w.probeNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "latency-probe", Namespace: w.probeNS},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app:1",
			Env: []corev1.EnvVar{{Name: "PROBE", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: w.probeName}, Key: "PROBE", Optional: &opt}}}}}}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	w.objects = sz.Namespaces + sz.Secrets + sz.Pods + sz.ExternalSecrets + sz.HelmReleases + 2
	w.created = time.Since(t0)
	return w, nil
}

// helmPayload renders a small but realistic chart and encodes it as Helm v3 does:
// base64(gzip(JSON)).
func helmPayload(name, ns string, r *rand.Rand) ([]byte, error) {
	manifest := fmt.Sprintf(`---
# Source: app/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[1]s
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s, helm.sh/chart: app-1.4.2}
---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s-config
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s}
type: Opaque
data:
  DATABASE_URL: %[2]s
  REDIS_URL: %[3]s
  SESSION_KEY: %[4]s
---
# Source: app/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s
data:
  app.yaml: |
    server:
      port: 8080
      readTimeout: 30s
      writeTimeout: 30s
    logging:
      level: info
      format: json
    features:
      newCheckout: true
      experimentalSearch: false
---
# Source: app/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  type: ClusterIP
  ports:
  - {port: 80, targetPort: http, protocol: TCP, name: http}
  selector: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s}
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
---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s, helm.sh/chart: app-1.4.2}
spec:
  replicas: 3
  selector:
    matchLabels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s}
  template:
    metadata:
      labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: %[1]s}
      annotations: {checksum/config: %[5]s}
    spec:
      serviceAccountName: %[1]s
      containers:
      - name: app
        image: "registry.example.com/team/app:1.4.2"
        imagePullPolicy: IfNotPresent
        ports: [{name: http, containerPort: 8080, protocol: TCP}]
        envFrom:
        - secretRef: {name: %[1]s-config}
        env:
        - name: API_TOKEN
          valueFrom: {secretKeyRef: {name: %[1]s-vault, key: API_TOKEN}}
        livenessProbe: {httpGet: {path: /healthz, port: http}}
        readinessProbe: {httpGet: {path: /readyz, port: http}}
        resources:
          limits: {cpu: 500m, memory: 512Mi}
          requests: {cpu: 100m, memory: 128Mi}
`, name, base64.StdEncoding.EncodeToString(randBytes(r, 40)), base64.StdEncoding.EncodeToString(randBytes(r, 30)),
		base64.StdEncoding.EncodeToString(randBytes(r, 32)), fmt.Sprintf("%x", randBytes(r, 32)))
	rel := map[string]any{
		"name": name, "namespace": ns, "version": 3,
		"info": map[string]any{"status": "deployed", "description": "Upgrade complete",
			"first_deployed": "2025-01-02T03:04:05Z", "last_deployed": "2025-03-04T05:06:07Z"},
		"chart": map[string]any{
			"metadata": map[string]any{"name": "app", "version": "1.4.2", "apiVersion": "v2", "appVersion": "1.4.2"},
			// Helm stores the chart's templates (base64) and values too; a modest stand-in.
			"templates": []any{map[string]any{"name": "templates/deployment.yaml", "data": base64.StdEncoding.EncodeToString([]byte(manifest))}},
			"values":    map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "registry.example.com/team/app"}},
		},
		"config":   map[string]any{"replicaCount": 3},
		"manifest": manifest,
	}
	js, err := json.Marshal(rel)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(js); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}

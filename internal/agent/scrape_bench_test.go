package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/driftwatch/driftwatch/internal/agent"
)

// The scrape benchmark builds, in fake clientsets, a cluster shaped like the one
// test/bench creates on the real apiserver (Secrets with 5 keys, 20 % of them with
// kubectl's last-applied annotation; naked pods with two env secretKeyRefs, an
// envFrom and a secret volume, 1 % reading a key their Secret lacks;
// ExternalSecrets with 5 data entries, Ready), lets the real informers, transforms
// and model sync, and then measures GET /metrics through the agent's handler.
//
// Size: DRIFTWATCH_BENCH_SCALE (default 0.1 = 2,000 Secrets / 1,000 Pods / 500
// ExternalSecrets; 1 = the 20k / 10k / 5k):
//
//	DRIFTWATCH_BENCH_SCALE=1 go test -run '^$' -bench Scrape -benchtime 20x ./internal/agent/

type benchCluster struct {
	core    []runtime.Object
	dyn     []runtime.Object
	secrets []*corev1.Secret
}

func benchScale(b *testing.B) float64 {
	s := 0.1
	if v := os.Getenv("DRIFTWATCH_BENCH_SCALE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("DRIFTWATCH_BENCH_SCALE=%q: want a positive number", v)
		}
		s = f
	}
	return s
}

func buildBenchCluster(scale float64) *benchCluster {
	nSecrets, nPods, nES := int(20000*scale), int(10000*scale), int(5000*scale)
	nNS := max(nSecrets/100, 1)
	r := rand.New(rand.NewPCG(1, 2))
	c := &benchCluster{}
	val := func() []byte {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return b
	}
	ns := func(i int) string { return fmt.Sprintf("bench-%04d", i%nNS) }
	perNS := make([][]string, nNS)
	for i := 0; i < nSecrets; i++ {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i), Namespace: ns(i),
				UID:    types.UID("uid-s-" + metav1Itoa(i)),
				Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%50)}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{},
		}
		for k := 0; k < 5; k++ {
			s.Data[fmt.Sprintf("KEY_%02d", k)] = val()
		}
		if r.Float64() < 0.2 {
			var sb strings.Builder
			sb.WriteString(`{"apiVersion":"v1","kind":"Secret","type":"Opaque","metadata":{"name":"` + s.Name + `","namespace":"` + s.Namespace + `"},"data":{`)
			for k := 0; k < 5; k++ {
				if k > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `"KEY_%02d":"%s"`, k, val())
			}
			sb.WriteString(`}}`)
			s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": sb.String()}
		}
		perNS[i%nNS] = append(perNS[i%nNS], s.Name)
		c.secrets = append(c.secrets, s)
		c.core = append(c.core, s)
	}
	opt := true
	for i := 0; i < nPods; i++ {
		l := perNS[i%nNS]
		pick := func(j int) string { return l[(i/nNS+j)%len(l)] }
		key := fmt.Sprintf("KEY_%02d", r.IntN(5))
		if r.Float64() < 0.01 {
			key = "NOT_THERE"
		}
		c.core = append(c.core, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: ns(i), UID: types.UID("uid-p-" + metav1Itoa(i))},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/team/app:1.2.3",
					Env: []corev1.EnvVar{
						{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(0)}, Key: key, Optional: &opt}}},
						{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: pick(1)}, Key: "KEY_00"}}},
					},
					EnvFrom:      []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: pick(2)}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}},
				}},
				Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pick(3)}}}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for i := 0; i < nES; i++ {
		l := perNS[i%nNS]
		target := l[(i/nNS)%len(l)]
		var data []any
		for k := 0; k < 5; k++ {
			data = append(data, map[string]any{"secretKey": fmt.Sprintf("KEY_%02d", k), "remoteRef": map[string]any{"key": "prod/" + target}})
		}
		c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": fmt.Sprintf("es-%05d", i), "namespace": ns(i), "uid": "uid-e-" + metav1Itoa(i)},
			"spec": map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"name": "vault", "kind": "ClusterSecretStore"},
				"target": map[string]any{"name": target, "creationPolicy": "Owner"}, "data": data},
			"status": map[string]any{"refreshTime": now, "conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "SecretSynced", "lastTransitionTime": now}}},
		}})
	}
	c.dyn = append(c.dyn, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
		"metadata": map[string]any{"name": "vault"},
		"spec":     map[string]any{"provider": map[string]any{"vault": map[string]any{"server": "https://vault:8200"}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Valid",
			"lastTransitionTime": now}}},
	}})
	return c
}

func metav1Itoa(i int) string { return strconv.Itoa(i) }

// startBenchAgent runs the agent's informers over the fake cluster until synced.
func startBenchAgent(b *testing.B, c *benchCluster, inventory bool) (*agent.Agent, *fake.Clientset, func()) {
	b.Helper()
	return startBenchAgentWith(b, c, func(cfg *agent.Config) { cfg.Findings.Inventory = inventory })
}

// startBenchAgentWith is startBenchAgent with the configuration edited by set.
func startBenchAgentWith(b *testing.B, c *benchCluster, set func(*agent.Config)) (*agent.Agent, *fake.Clientset, func()) {
	b.Helper()
	cs := fake.NewClientset(c.core...)
	fd := cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "secrets", Namespaced: true, Kind: "Secret"},
			{Name: "pods", Namespaced: true, Kind: "Pod"}, {Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount"}}},
		{GroupVersion: "external-secrets.io/v1", APIResources: []metav1.APIResource{
			{Name: "externalsecrets", Namespaced: true, Kind: "ExternalSecret"},
			{Name: "secretstores", Namespaced: true, Kind: "SecretStore"},
			{Name: "clustersecretstores", Namespaced: false, Kind: "ClusterSecretStore"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}:     "ExternalSecretList",
		{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}:        "SecretStoreList",
		{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}: "ClusterSecretStoreList",
	}, c.dyn...)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := agent.Config{Logger: log, DiscoveryInterval: time.Hour}
	set(&cfg)
	a := agent.New(agent.Clients{Core: cs, Dynamic: dyn, Discovery: cs.Discovery()}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Manager.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Minute)
	for !a.Manager.Ready() {
		if time.Now().After(deadline) {
			b.Fatal("fake cluster did not sync")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return a, cs, func() { cancel(); <-done }
}

func scrape(b *testing.B, h http.Handler, gzip bool) int {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("GET /metrics: %d", w.Code)
	}
	return w.Body.Len()
}

func countSeries(body string) int {
	n := 0
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "driftwatch_") {
			n++
		}
	}
	return n
}

// BenchmarkScrape measures one GET /metrics of the synced fake cluster, with the
// model unchanged since the previous scrape ("idle") and after Secret updates
// arrived between scrapes ("churn": 20 Secrets updated per scrape, the bench's
// 200 updates/s at ten scrapes per second; "churn-all": one in every
// namespace; "churn-all-ahead": the same, evaluated ahead of the scrape).
func BenchmarkScrape(b *testing.B) {
	c := buildBenchCluster(benchScale(b))
	for _, inv := range []bool{false, true} {
		a, cs, stop := startBenchAgent(b, c, inv)
		h := a.Handler()
		body := httptest.NewRecorder()
		a.Handler().ServeHTTP(body, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		n := countSeries(body.Body.String())
		name := fmt.Sprintf("inventory=%v", inv)
		b.Run(name+"/idle", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				scrape(b, h, false)
			}
			b.ReportMetric(float64(n), "series")
		})
		b.Run(name+"/idle-gzip", func(b *testing.B) {
			b.ReportAllocs()
			size := 0
			for i := 0; i < b.N; i++ {
				size = scrape(b, h, true)
			}
			b.ReportMetric(float64(n), "series")
			b.ReportMetric(float64(size), "gzip-bytes")
		})
		b.Run(name+"/churn", func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			next := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for j := 0; j < 20; j++ {
					next++
					rewriteSecret(ctx, b, cs, c.secrets[(next-1)%len(c.secrets)], next)
				}
				time.Sleep(20 * time.Millisecond) // let the informer deliver the updates
				b.StartTimer()
				scrape(b, h, false)
			}
			b.ReportMetric(float64(n), "series")
		})
		// churn-all: one Secret updated in every namespace between scrapes,
		// as a Prometheus scrape every 15-30 s sees under any steady churn:
		// every namespace is evaluated again (the bench's "first scrape after
		// the warm-up").
		firstOf := map[string]*corev1.Secret{}
		for _, s := range c.secrets {
			if firstOf[s.Namespace] == nil {
				firstOf[s.Namespace] = s
			}
		}
		// churn-all-ahead: the same changes, evaluated ahead of the scrape
		// (Findings.Prepare, untimed) as --evaluate-ahead does before a
		// scraper's next scrape is due: what that scrape is left with.
		gen := 0
		for _, ahead := range []bool{false, true} {
			sub := name + "/churn-all"
			if ahead {
				sub += "-ahead"
			}
			b.Run(sub, func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					gen++
					for _, s := range firstOf {
						rewriteSecret(ctx, b, cs, s, gen)
					}
					time.Sleep(100 * time.Millisecond) // let the informer deliver the updates
					if ahead && a.Findings.Prepare() == 0 {
						b.Fatal("Prepare evaluated no namespace")
					}
					b.StartTimer()
					scrape(b, h, false)
				}
				b.ReportMetric(float64(n), "series")
				b.ReportMetric(float64(len(firstOf)), "namespaces")
			})
		}
		stop()
	}
}

// rewriteSecret updates s with five new values (KEY_00..KEY_04, generation
// gen): a changed Secret for the scrape benchmarks' churn.
func rewriteSecret(ctx context.Context, b *testing.B, cs *fake.Clientset, s *corev1.Secret, gen int) {
	upd := s.DeepCopy()
	upd.Data = map[string][]byte{}
	for k := 0; k < 5; k++ {
		upd.Data[fmt.Sprintf("KEY_%02d", k)] = []byte(fmt.Sprintf("v-%d-%d", gen, k))
	}
	if _, err := cs.CoreV1().Secrets(s.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
}

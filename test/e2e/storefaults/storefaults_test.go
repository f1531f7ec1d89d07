package storefaults

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/finding"
	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/pages"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

const (
	remoteNS  = "payments"   // the store's namespace the provider reads
	readerSA  = "eso-reader" // the store's ServiceAccount whose token ESO uses
	certUser  = "eso-cert"   // the store's user of the client certificate
	refresh   = "3s"         // every ExternalSecret's refreshInterval
	wait      = 3 * time.Minute
	alertWait = 3 * time.Minute
)

var (
	esGVR    = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	storeGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}
	cssGVR   = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}
)

// clusterStore is the ClusterSecretStore of the test (cluster-scoped: its
// findings have namespace "").
const clusterStore = "storefaults-remote"

// fixture is what the faults share.
type fixture struct {
	t     *testing.T
	c     *cluster.Cluster
	store *cluster.StoreServer
	ns    string
	agent *cluster.Agent
	ps    *promstack.Stack
	hook  *promstack.Webhook
	mon   *pages.Monitor
	t0    time.Time
}

func (f *fixture) step(format string, args ...any) {
	f.t.Helper()
	f.t.Logf("[%s] %s", time.Since(f.t0).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// poll calls cond every interval until it returns true, failing the test
// after timeout with cond's last description.
func poll(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for {
		ok, desc := cond()
		if ok {
			return time.Since(start)
		}
		last = desc
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// esState is an ExternalSecret's Ready condition and refresh time.
type esState struct {
	Status, Reason, Message string
	RefreshTime             time.Time
}

func (f *fixture) es(name string) esState {
	u, err := f.c.Dynamic.Resource(esGVR).Namespace(f.ns).Get(ctxT(f.t), name, metav1.GetOptions{})
	if err != nil {
		return esState{Status: "error: " + err.Error()}
	}
	return readyOf(u)
}

func (f *fixture) storeState(name string) esState {
	ri := f.c.Dynamic.Resource(storeGVR).Namespace(f.ns)
	if name == clusterStore {
		ri = f.c.Dynamic.Resource(cssGVR)
	}
	u, err := ri.Get(ctxT(f.t), name, metav1.GetOptions{})
	if err != nil {
		return esState{Status: "error: " + err.Error()}
	}
	return readyOf(u)
}

func readyOf(u *unstructured.Unstructured) esState {
	var s esState
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s.Status, _ = m["status"].(string)
			s.Reason, _ = m["reason"].(string)
			s.Message, _ = m["message"].(string)
		}
	}
	if rt, ok, _ := unstructured.NestedString(u.Object, "status", "refreshTime"); ok {
		s.RefreshTime, _ = time.Parse(time.RFC3339, rt)
	}
	return s
}

func (s esState) String() string {
	return fmt.Sprintf("Ready=%s reason=%s message=%q refreshTime=%s", s.Status, s.Reason, s.Message, s.RefreshTime.Format(time.RFC3339))
}

func (f *fixture) secretKeys(name string) []string {
	s, err := f.c.Client.CoreV1().Secrets(f.ns).Get(ctxT(f.t), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var keys []string
	for k := range s.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// remoteSecret writes a Secret of the store (create or replace its data).
func (f *fixture) remoteSecret(name string, data map[string]string) {
	f.t.Helper()
	ctx := ctxT(f.t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: remoteNS}, StringData: data}
	secrets := f.store.Client.CoreV1().Secrets(remoteNS)
	old, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err != nil {
		f.t.Fatal(err)
	}
	old.Data, old.StringData = nil, data
	if _, err := secrets.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) localSecret(name string, data map[string][]byte) {
	f.t.Helper()
	ctx := ctxT(f.t)
	secrets := f.c.Client.CoreV1().Secrets(f.ns)
	old, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err != nil {
		f.t.Fatal(err)
	}
	old.Data = data
	if _, err := secrets.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// readerRBAC creates (or deletes) the store's RoleBinding that lets the
// reader ServiceAccount and the certificate user read remoteNS's Secrets.
func (f *fixture) readerBinding(present bool) {
	f.t.Helper()
	ctx := ctxT(f.t)
	rbs := f.store.Client.RbacV1().RoleBindings(remoteNS)
	if !present {
		if err := rbs.Delete(ctx, "eso-read", metav1.DeleteOptions{}); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	_, err := rbs.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "eso-read"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-secrets"},
		Subjects: []rbacv1.Subject{
			{Kind: "ServiceAccount", Name: readerSA, Namespace: remoteNS},
			{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: certUser},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) createReaderSA() {
	f.t.Helper()
	if _, err := f.store.Client.CoreV1().ServiceAccounts(remoteNS).Create(ctxT(f.t),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: readerSA}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// writeToken puts a fresh token of the reader ServiceAccount into the
// SecretStore's auth Secret.
func (f *fixture) writeToken() {
	f.t.Helper()
	f.localSecret("store-token", map[string][]byte{"token": []byte(f.store.Token(ctxT(f.t), remoteNS, readerSA))})
}

// writeCert puts a client certificate valid until notAfter into the cert
// store's auth Secret.
func (f *fixture) writeCert(notAfter time.Time) {
	f.t.Helper()
	crt, key := f.store.ClientCert(certUser, notAfter)
	f.localSecret("store-cert", map[string][]byte{"tls.crt": crt, "tls.key": key})
}

// storeYAML is a store of kind (SecretStore or ClusterSecretStore) using
// ESO's kubernetes provider against the store server, with auth (indented
// under spec.provider.kubernetes.auth).
func storeYAML(kind, name, server string, ca []byte, auth string) string {
	return fmt.Sprintf(`apiVersion: external-secrets.io/v1
kind: %s
metadata: {name: %s}
spec:
  refreshInterval: 3
  provider:
    kubernetes:
      remoteNamespace: %s
      server:
        url: %s
        caBundle: %s
      auth:
%s
`, kind, name, remoteNS, server, base64.StdEncoding.EncodeToString(ca), auth)
}

const tokenAuth = `        token:
          bearerToken: {name: store-token, key: token}`

const certAuth = `        cert:
          clientCert: {name: store-cert, key: tls.crt}
          clientKey: {name: store-cert, key: tls.key}`

const externalSecrets = `apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db-props}
spec:
  refreshInterval: ` + refresh + `
  secretStoreRef: {kind: SecretStore, name: remote}
  target: {name: db-props, creationPolicy: Owner}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db, property: username}}
  - {secretKey: DB_PASSWORD, remoteRef: {key: db, property: password}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: api-extract}
spec:
  refreshInterval: ` + refresh + `
  secretStoreRef: {kind: SecretStore, name: remote}
  target: {name: api-creds, creationPolicy: Owner}
  dataFrom:
  - extract: {key: api}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: features-find}
spec:
  refreshInterval: ` + refresh + `
  secretStoreRef: {kind: SecretStore, name: remote}
  target: {name: features, creationPolicy: Owner}
  dataFrom:
  - find: {name: {regexp: "^feature-"}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: cert-db}
spec:
  refreshInterval: ` + refresh + `
  secretStoreRef: {kind: SecretStore, name: remote-cert}
  target: {name: cert-db, creationPolicy: Owner}
  data:
  - {secretKey: DB_USER, remoteRef: {key: db, property: username}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: cluster-db}
spec:
  refreshInterval: ` + refresh + `
  secretStoreRef: {kind: ClusterSecretStore, name: ` + clusterStore + `}
  target: {name: cluster-db, creationPolicy: Owner}
  data:
  - {secretKey: DB_USER, remoteRef: {key: cluster, property: username}}
`

// The workloads: web reads every key by env (secretKeyRef, required), files
// mounts db-props as a volume (the kubelet refreshes it).
const workloads = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: registry.example/web:1
        env:
        - {name: DB_USER, valueFrom: {secretKeyRef: {name: db-props, key: DB_USER}}}
        - {name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: db-props, key: DB_PASSWORD}}}
        - {name: API_KEY, valueFrom: {secretKeyRef: {name: api-creds, key: API_KEY}}}
        - {name: API_URL, valueFrom: {secretKeyRef: {name: api-creds, key: API_URL}}}
        - {name: FEATURE_BETA, valueFrom: {secretKeyRef: {name: features, key: feature-beta}}}
        - {name: CERT_USER, valueFrom: {secretKeyRef: {name: cert-db, key: DB_USER}}}
        - {name: CLUSTER_USER, valueFrom: {secretKeyRef: {name: cluster-db, key: DB_USER}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: files}
spec:
  replicas: 1
  selector: {matchLabels: {app: files}}
  template:
    metadata: {labels: {app: files}}
    spec:
      containers:
      - name: app
        image: registry.example/files:1
        volumeMounts: [{name: db, mountPath: /etc/db, readOnly: true}]
      volumes:
      - name: db
        secret: {secretName: db-props}
`

var allES = []string{"db-props", "api-extract", "features-find", "cert-db", "cluster-db"}

func TestStoreFaults(t *testing.T) {
	c := cluster.Get(t)
	f := &fixture{t: t, c: c, ns: c.NewNamespace(t), t0: time.Now()}
	ctx := ctxT(t)

	// ---- the store: a second apiserver, a reader with a Role --------------------
	f.store = c.StartStoreServer(t)
	f.step("store apiserver %s ready", f.store.URL)
	if _, err := f.store.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Client.RbacV1().Roles(remoteNS).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.createReaderSA()
	f.readerBinding(true)
	f.remoteSecret("db", map[string]string{"username": "app", "password": "storefaults-db-v1"})
	f.remoteSecret("api", map[string]string{"API_KEY": "storefaults-api-key", "API_URL": "https://api.example"})
	f.remoteSecret("feature-alpha", map[string]string{"on": "1"})
	f.remoteSecret("feature-beta", map[string]string{"on": "1"})
	f.remoteSecret("unrelated", map[string]string{"x": "1"})
	f.remoteSecret("cluster", map[string]string{"username": "cluster-app"})

	// ---- the consumer cluster: stores, ExternalSecrets, workloads --------------------
	f.writeToken()
	f.writeCert(time.Now().Add(time.Hour))
	c.Apply(t, f.ns, storeYAML("SecretStore", "remote", f.store.URL, f.store.CAPEM, tokenAuth))
	c.Apply(t, f.ns, storeYAML("SecretStore", "remote-cert", f.store.URL, f.store.CAPEM, certAuth))
	// The ClusterSecretStore names its auth Secret with its namespace.
	c.Apply(t, "", storeYAML("ClusterSecretStore", clusterStore, f.store.URL, f.store.CAPEM,
		strings.Replace(tokenAuth, "key: token}", "key: token, namespace: "+f.ns+"}", 1)))
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(cssGVR).Delete(context.Background(), clusterStore, metav1.DeleteOptions{})
	})
	c.Apply(t, f.ns, externalSecrets)
	f.allReady("start")
	f.targetsKept("written by ESO's kubernetes provider")
	if t.Failed() {
		return
	}
	for _, s := range []string{"remote", "remote-cert", clusterStore} {
		t.Logf("fact: healthy store %s: %s", s, f.storeState(s))
	}
	f.step("ESO synced all five ExternalSecrets from the store")
	c.Apply(t, f.ns, workloads)
	c.MarkPodsRunning(t, f.ns, "app=web", 1)
	c.MarkPodsRunning(t, f.ns, "app=files", 1)

	// ---- agent, Prometheus, Alertmanager, monitor --------------------------------------------
	f.agent = c.StartAgent(t, "--namespaces", f.ns, "--inventory")
	f.agent.WaitReady(t, wait)
	f.hook = promstack.NewWebhook(t)
	f.ps = promstack.Start(t, c, f.agent.Addr, f.hook)
	f.mon = pages.NewMonitor(f.agent, 500*time.Millisecond)
	f.mon.Start()
	defer func() {
		f.mon.Finish()
		for _, p := range f.mon.UnexpectedPages() {
			t.Errorf("page-grade finding outside the shrink faults: %s", p)
		}
		for _, s := range f.mon.UnexpectedFindings() {
			t.Errorf("finding outside its fault's window: %s", s)
		}
		t.Logf("monitor: %s", f.mon.Report())
	}()
	f.quiet("healthy")
	f.step("agent, Prometheus and Alertmanager up; healthy: no finding")

	for _, fault := range []struct {
		name string
		run  func(*fixture)
	}{
		{"store_unreachable", faultUnreachable},
		{"permission_removed", faultPermission},
		{"token_revoked", faultTokenRevoked},
		{"certificate_expired", faultCertExpired},
		{"key_deleted_spec_data", faultKeyDeletedData},
		{"key_deleted_extract", faultKeyDeletedExtract},
		{"key_deleted_find", faultKeyDeletedFind},
		{"value_rotated", faultRotated},
	} {
		f.mon.SetPhase(fault.name)
		f.step("---- %s", fault.name)
		t0 := time.Now()
		fault.run(f)
		f.quiet(fault.name + " undone")
		f.step("%s: undone and quiet, %s in all", fault.name, time.Since(t0).Round(time.Second))
		if t.Failed() {
			return
		}
	}
	f.mon.SetPhase("bad input")
	badInput(f)
}

// allReady waits until ESO says every ExternalSecret is Ready.
func (f *fixture) allReady(phase string) {
	f.t.Helper()
	for _, es := range allES {
		poll(f.t, wait, phase+": "+es+" Ready", func() (bool, string) {
			s := f.es(es)
			return s.Status == "True", s.String()
		})
	}
}

// quiet waits until every ExternalSecret is Ready and the agent reports no
// warning or critical finding in the namespace, and until Alertmanager has
// no firing alert of the namespace.
func (f *fixture) quiet(phase string) {
	f.t.Helper()
	f.allReady(phase)
	poll(f.t, wait, phase+": no finding", func() (bool, string) {
		series, err := f.agent.Scrape()
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, s := range series {
			if scrape.IsFinding(s) && s.Value > 0 && (s.Labels["namespace"] == f.ns || s.Labels["store"] == clusterStore) &&
				(pages.Severity(s) == finding.SevWarning || pages.Severity(s) == finding.SevCritical) {
				left = append(left, s.String())
			}
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
	poll(f.t, alertWait, phase+": no alert firing", func() (bool, string) {
		s, err := f.ps.Query(`ALERTS{alertstate="firing", namespace="` + f.ns + `"} or ALERTS{alertstate="firing", store="` + clusterStore + `"}`)
		if err != nil {
			return false, err.Error()
		}
		return len(s) == 0, fmt.Sprint(s)
	})
}

// allow opens a window for the warning-grade findings of the families given
// (in the namespace) while a fault lasts.
func (f *fixture) allow(families ...string) func() {
	return f.mon.AllowSeries(func(s scrape.Series) bool {
		return (s.Labels["namespace"] == f.ns || s.Labels["store"] == clusterStore) && slices.Contains(families, s.Name)
	})
}

// waitAlert waits for Alertmanager's notification of alert (status firing or
// resolved) with the labels given, from notification index from.
func (f *fixture) waitAlert(from int, status, alert string, labels map[string]string) promstack.Alert {
	f.t.Helper()
	_, a := f.ps.WaitHook(f.t, f.hook, from, alertWait, alert+" "+status+fmt.Sprint(labels), func(m promstack.Message, a promstack.Alert) bool {
		if a.Labels["alertname"] != alert || a.Status != status {
			return false
		}
		if a.Labels["namespace"] != f.ns && a.Labels["store"] != clusterStore {
			return false
		}
		for k, v := range labels {
			if a.Labels[k] != v {
				return false
			}
		}
		return true
	})
	return a
}

package node

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/test/e2e/cluster/scrape"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

// testStoreRotation (issue 32): a value rotated at the provider, end to end
// on the real node. ESO's kubernetes provider reads the value from a second
// apiserver (cluster.StartStoreServer) into Secret db-creds; svol mounts it as
// a volume, senv reads it by env secretKeyRef. The value is rotated in the
// store: ESO updates the Secret, the real kubelet refreshes svol's volume,
// senv keeps the value it started with. driftwatch reports senv stale and not
// svol; a rollout restart makes senv current and the alert resolves.
func testStoreRotation(t *testing.T, s *stack) {
	c, n := s.c, s.n
	ctx := ctxT(t, 10*time.Minute)
	ns := c.NewNamespace(t)
	store := c.StartStoreServer(t)
	const remote = "payments"
	sc := store.Client
	if _, err := sc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remote}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CoreV1().ServiceAccounts(remote).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.RbacV1().Roles(remote).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.RbacV1().RoleBindings(remote).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: remote}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setRemote := func(v string) {
		t.Helper()
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": v}}
		if old, err := sc.CoreV1().Secrets(remote).Get(ctx, "db", metav1.GetOptions{}); err == nil {
			old.Data, old.StringData = nil, sec.StringData
			_, err = sc.CoreV1().Secrets(remote).Update(ctx, old, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := sc.CoreV1().Secrets(remote).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setRemote("node-e2e-store-v1")
	c.Apply(t, ns, secretYAML("store-token", map[string]string{"token": store.Token(ctx, remote, "reader")}))
	c.Apply(t, ns, fmt.Sprintf(`apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {name: remote}
spec:
  provider:
    kubernetes:
      remoteNamespace: %s
      server: {url: %s, caBundle: %s}
      auth: {token: {bearerToken: {name: store-token, key: token}}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: db}
spec:
  refreshInterval: 2s
  secretStoreRef: {kind: SecretStore, name: remote}
  target: {name: db-creds, creationPolicy: Owner}
  data:
  - {secretKey: DB_PASSWORD, remoteRef: {key: db, property: password}}
`, remote, store.URL, base64.StdEncoding.EncodeToString(store.CAPEM)))
	value := func() string {
		sec, err := c.Client.CoreV1().Secrets(ns).Get(ctx, "db-creds", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(sec.Data["DB_PASSWORD"])
	}
	poll(t, 2*time.Minute, 500*time.Millisecond, "ESO writes db-creds from the store", func() (bool, string) {
		v := value()
		return v == "node-e2e-store-v1", v
	})
	c.Apply(t, ns, deployment("svol", `        args: [/etc/creds]
        volumeMounts: [{name: creds, mountPath: /etc/creds, readOnly: true}]`, `      volumes:
      - name: creds
        secret: {secretName: db-creds}`))
	c.Apply(t, ns, deployment("senv", `        env: [{name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: db-creds, key: DB_PASSWORD}}}]`, ""))
	vol := runningPod(t, c, ns, "app=svol", 2*time.Minute)
	env := runningPod(t, c, ns, "app=senv", 2*time.Minute)
	waitReport(t, c, vol, "app", time.Minute, "svol's report", func(r report) bool {
		return slices.Equal(visible(r.Dirs["/etc/creds"]), []string{"DB_PASSWORD"})
	})
	waitReport(t, c, env, "app", time.Minute, "senv's report", func(r report) bool { return slices.Contains(r.Env, "DB_PASSWORD") })
	dataLink := func() string {
		l, err := os.Readlink(filepath.Join(volumeDir(n, vol, "creds"), "..data"))
		if err != nil {
			return "error: " + err.Error()
		}
		return l
	}
	before := dataLink()
	s.waitSeries(t, "driftwatch_secret_last_data_change_timestamp_seconds", map[string]string{"namespace": ns, "secret": "db-creds"}, time.Minute)
	s.waitNoSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns}, 5*time.Second)

	from := s.hook.Count()
	rotated := time.Now()
	setRemote("node-e2e-store-v2")
	poll(t, 2*time.Minute, 250*time.Millisecond, "ESO writes the rotated value into db-creds", func() (bool, string) {
		return value() == "node-e2e-store-v2", ""
	})
	t.Logf("fact: value rotated in the store: ESO updated db-creds within %s", time.Since(rotated).Round(100*time.Millisecond))
	poll(t, 3*time.Minute, 500*time.Millisecond, "the kubelet refreshing svol's secret volume", func() (bool, string) {
		l := dataLink()
		return l != before && !slices.Contains([]string{"", before}, l), l
	})
	t.Logf("fact: the real kubelet refreshed svol's volume (..data %s → %s) within %s of the rotation in the store", before, dataLink(), time.Since(rotated).Round(time.Second))

	s.waitSeries(t, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns, "pod": env.Name, "via": "env", "change_source": "observed"}, time.Minute)
	series, err := s.scrape()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range scrape.Find(series, "driftwatch_pod_stale_secret_seconds", map[string]string{"namespace": ns}) {
		if x.Labels["pod"] == vol.Name {
			t.Errorf("svol's volume, refreshed by the kubelet, is reported stale: %s", x)
		}
	}
	for _, x := range scrape.Find(series, "driftwatch_workload_stale_pods", map[string]string{"namespace": ns}) {
		if x.Labels["workload"] != "senv" {
			t.Errorf("a stale workload other than senv: %s", x)
		}
	}
	_, a := s.ps.WaitHook(t, s.hook, from, alertTimout, "the stale-pods alert for senv", alertIs("DriftwatchWorkloadStalePods", ns, map[string]string{"workload": "senv"}))
	t.Logf("fact: rotation in the store: alert %s %s: %s", a.Labels["alertname"], a.Status, a.Annotations["description"])
	if _, a, ok := s.hook.Find(from, alertIs("DriftwatchWorkloadStalePods", ns, map[string]string{"workload": "svol"})); ok {
		t.Errorf("a stale-pods alert for svol, whose volume the kubelet refreshed: %v", a.Labels)
	}

	from = s.hook.Count()
	if out, err := c.Kubectl(ctx, "", "-n", ns, "rollout", "restart", "deployment/senv"); err != nil {
		t.Fatalf("kubectl rollout restart: %v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "", "-n", ns, "rollout", "status", "deployment/senv", "--timeout=3m"); err != nil {
		t.Fatalf("kubectl rollout status: %v\n%s", err, out)
	}
	s.waitNoSeries(t, "driftwatch_workload_stale_pods", map[string]string{"namespace": ns}, time.Minute)
	s.ps.WaitHook(t, s.hook, from, alertTimout, "the stale-pods alert for senv resolved", func(m promstack.Message, a promstack.Alert) bool {
		return alertIs("DriftwatchWorkloadStalePods", ns, map[string]string{"workload": "senv"})(m, a) && a.Status == "resolved"
	})
	t.Logf("fact: after a rollout restart senv is current; the alert resolved")

	// The store stops when this subtest ends. Its readers go first, then the
	// ExternalSecret (whose Secret the garbage collector deletes with it), or
	// the next subtests would see real faults in this namespace while it
	// terminates: an ExternalSecret not Ready, a Secret absent that running
	// pods read.
	for _, args := range [][]string{
		{"delete", "deployment/svol", "deployment/senv", "--cascade=foreground", "--wait=true", "--timeout=2m"},
		{"delete", "externalsecret/db", "secretstore/remote", "--wait=true", "--timeout=2m"},
	} {
		if out, err := c.Kubectl(ctx, "", append([]string{"-n", ns}, args...)...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	poll(t, time.Minute, time.Second, "no series of "+ns+" left", func() (bool, string) {
		series, err := s.scrape()
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, x := range series {
			if x.Labels["namespace"] == ns && scrape.IsFinding(x) {
				left = append(left, x.String())
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
}

// Package chart installs the Helm chart (deploy/chart/driftwatch) into the
// real stack with the real helm, and proves what it grants and serves: the
// agent runs with a token of the ServiceAccount the chart created
// (TokenRequest), so the chart's own RBAC is what is shown sufficient and
// read-only; `helm upgrade` with a web configuration (TLS, basic auth) makes
// an unauthenticated scrape a 401, and the chart's ServiceMonitor endpoint,
// translated into a Prometheus scrape configuration (there is no
// prometheus-operator here), is what the real Prometheus scrapes with. The
// kubectl plugin runs against the same stack through kubectl, with --context.
package chart

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
	"github.com/driftwatch/driftwatch/test/e2e/promstack"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{ESOCRDs: true}))
}

const (
	release   = "dw"
	namespace = "driftwatch"
	saName    = "dw-driftwatch" // the chart's fullname for release "dw"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy", "chart", "driftwatch")
}

// tokenKubeconfig writes a kubeconfig whose contexts (each naming a
// namespace) all authenticate with token, the way a pod's mounted token does.
func tokenKubeconfig(t *testing.T, c *cluster.Cluster, path, token string, contexts map[string]string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["stack"] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthorityData: c.AdminConfig.TLSClientConfig.CAData}
	if len(cfg.Clusters["stack"].CertificateAuthorityData) == 0 {
		cfg.Clusters["stack"].CertificateAuthority = c.AdminConfig.TLSClientConfig.CAFile
	}
	cfg.AuthInfos["chart-sa"] = &clientcmdapi.AuthInfo{Token: token}
	for name, ns := range contexts {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "stack", AuthInfo: "chart-sa", Namespace: ns}
		if cfg.CurrentContext == "" || name < cfg.CurrentContext {
			cfg.CurrentContext = name
		}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

func TestChartInstalledForReal(t *testing.T) {
	c := cluster.Get(t)
	ctx := ctxT(t, 10*time.Minute)
	chart := chartDir(t)

	// --- helm install: the real helm, a real release Secret ------------------
	if out, err := c.Helm(ctx, "install", release, chart, "--namespace", namespace, "--create-namespace", "--wait=false"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := c.Helm(context.Background(), "uninstall", release, "--namespace", namespace); err != nil {
			t.Logf("helm uninstall: %v\n%s", err, out)
		}
	})
	rel, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, "sh.helm.release.v1."+release+".v1", metav1.GetOptions{})
	if err != nil || rel.Type != "helm.sh/release.v1" {
		t.Fatalf("the release Secret: %v (type %q)", err, rel.Type)
	}
	t.Logf("fact: helm wrote release Secret %s/%s type %s labels %v", rel.Namespace, rel.Name, rel.Type, rel.Labels)
	for _, kind := range []string{"serviceaccounts", "clusterroles", "clusterrolebindings", "deployments", "services"} {
		out, err := c.Kubectl(ctx, "", "get", kind, "-A", "-l", "app.kubernetes.io/instance="+release, "-o", "name")
		if err != nil || strings.TrimSpace(out) == "" {
			t.Errorf("the chart created no %s: %v", kind, err)
		} else {
			t.Logf("fact: chart created %s", strings.Join(strings.Fields(out), " "))
		}
	}

	// --- a token of the chart's ServiceAccount (TokenRequest) -----------------
	tr, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, saName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, saName, err)
	}
	dir := c.TempDir(t, "chart")
	kc := filepath.Join(dir, "kubeconfig")
	app := c.NewNamespace(t)
	tokenKubeconfig(t, c, kc, tr.Status.Token, map[string]string{"chart-sa": app, "staging": app, "prod": app})

	// Read-only: the chart's RBAC lets the token read and nothing else.
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.CoreV1().Secrets(app).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the chart's ServiceAccount cannot list Secrets: %v", err)
	}
	writes := map[string]error{}
	_, writes["create secret"] = sa.CoreV1().Secrets(app).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	_, writes["create configmap"] = sa.CoreV1().ConfigMaps(app).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	writes["delete secret"] = sa.CoreV1().Secrets(namespace).Delete(ctx, rel.Name, metav1.DeleteOptions{})
	_, writes["create token"] = sa.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, saName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	_, writes["list configmaps"] = sa.CoreV1().ConfigMaps(app).List(ctx, metav1.ListOptions{})
	for what, err := range writes {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount may %s (err %v): the chart grants more than reads", what, err)
		}
	}

	// A finding for the agent to report: a pod reading a Secret nobody made,
	// and a pair of Secrets for compare.
	c.Apply(t, app, `apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: app
    image: busybox
    envFrom: [{secretRef: {name: never-created}}]
---
apiVersion: v1
kind: Secret
metadata: {name: cfg-a}
stringData: {user: app, token: chart-e2e-token-value-1}
---
apiVersion: v1
kind: Secret
metadata: {name: cfg-b}
stringData: {user: app, token: "chart-e2e-token-value-1\n"}`)

	// --- the agent with the chart's RBAC and arguments ------------------------
	dep, err := c.Client.AppsV1().Deployments(namespace).Get(ctx, saName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := dep.Spec.Template.Spec.Containers[0]
	args, healthAddr := chartArgs(t, ct, "")
	a := c.StartAgent(t, append([]string{"--kubeconfig", kc}, args...)...)
	waitProbedReady(t, ct, a, healthAddr, 2*time.Minute)
	a.WaitReady(t, 2*time.Minute)
	a.WaitForSeries(t, "driftwatch_secret_absent", map[string]string{"namespace": app, "secret": "never-created"}, time.Minute)
	code, body, err := a.Get("/api/v1/findings?namespace=" + app)
	if err != nil || code != 200 {
		t.Fatalf("/api/v1/findings: %d %v", code, err)
	}
	var rep struct {
		Findings    []struct{ Metric string }
		Unavailable []string
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	for _, u := range rep.Unavailable {
		if strings.Contains(u, "forbidden") {
			t.Errorf("with the chart's RBAC the agent lacks %s", u)
		}
	}
	t.Logf("fact: with the chart's token, unavailable: %v; findings in %s: %d", rep.Unavailable, app, len(rep.Findings))
	_ = a.Stop()

	// --- kubectl driftwatch, through the real kubectl -------------------------
	plugin := buildPlugin(t, c)
	kubectl, err := tools.Tool(tools.KubectlBin)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + kc, "PATH=" + filepath.Dir(plugin) + ":" + os.Getenv("PATH")}
	out, code := runWith(t, env, kubectl, "plugin", "list")
	if code != 0 || !strings.Contains(out, "kubectl-driftwatch") {
		t.Errorf("kubectl plugin list (%d):\n%s", code, out)
	}
	out, code = runWith(t, env, kubectl, "driftwatch", "check", "--context", "chart-sa", "-n", app, "--output", "json")
	if code != 1 || !strings.Contains(out, `"metric": "driftwatch_secret_absent"`) || !strings.Contains(out, `"name": "never-created"`) {
		t.Errorf("kubectl driftwatch check --context chart-sa -n %s: exit %d\n%s", app, code, out)
	}
	out, code = runWith(t, env, kubectl, "driftwatch", "check", "--context", "nowhere")
	if code != 2 {
		t.Errorf("check with an unknown context: exit %d\n%s", code, out)
	}
	// Across contexts, bare names resolved in each context's namespace.
	out, code = runWith(t, env, kubectl, "driftwatch", "compare", "staging:cfg-a", "prod:cfg-b")
	if code != 1 || !strings.Contains(out, "token: MISMATCH") || !strings.Contains(out, "trailing newline") ||
		!strings.Contains(out, "user: MATCH") || !strings.Contains(out, "live staging:"+app+"/cfg-a vs store prod:"+app+"/cfg-b") {
		t.Errorf("kubectl driftwatch compare staging:cfg-a prod:cfg-b: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "chart-e2e-token-value") {
		t.Error("compare printed a value")
	}
	t.Logf("kubectl driftwatch compare staging:cfg-a prod:cfg-b:\n%s", out)

	// --- helm upgrade with a web configuration --------------------------------
	pki := newPKI(t)
	pass := "scrape-" + rand.Text()
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := fmt.Sprintf("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %q\n", hash)
	if _, err := c.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dw-web"},
		Data: map[string][]byte{"web-config.yml": []byte(webCfg), "tls.crt": pki.certPEM, "tls.key": pki.keyPEM, "ca.crt": pki.caPEM}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dw-scrape"},
		Data: map[string][]byte{"username": []byte("prometheus"), "password": []byte(pass)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webValues := []string{"--set", "web.configSecret=dw-web", "--set", "web.tls=true", "--set", "web.basicAuth=true",
		"--set", "ui.secretPage=false",
		"--set", "serviceMonitor.interval=1s", "--set", "serviceMonitor.scrapeTimeout=1s",
		"--set", "serviceMonitor.tlsConfig.ca.secret.name=dw-web", "--set", "serviceMonitor.tlsConfig.ca.secret.key=ca.crt",
		"--set", "serviceMonitor.tlsConfig.serverName=driftwatch",
		"--set", "serviceMonitor.basicAuth.username.name=dw-scrape", "--set", "serviceMonitor.basicAuth.username.key=username",
		"--set", "serviceMonitor.basicAuth.password.name=dw-scrape", "--set", "serviceMonitor.basicAuth.password.key=password"}
	if out, err := c.Helm(ctx, append([]string{"upgrade", release, chart, "--namespace", namespace, "--wait=false"}, webValues...)...); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	dep, err = c.Client.AppsV1().Deployments(namespace).Get(ctx, saName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct = dep.Spec.Template.Spec.Containers[0]
	var cfgArg string
	for _, a := range ct.Args {
		if v, ok := strings.CutPrefix(a, "--web.config.file="); ok {
			cfgArg = v
		}
	}
	if cfgArg != "/etc/driftwatch/web/web-config.yml" || len(ct.VolumeMounts) != 1 || ct.VolumeMounts[0].MountPath != "/etc/driftwatch/web" ||
		ct.ReadinessProbe == nil || ct.ReadinessProbe.HTTPGet == nil {
		t.Fatalf("upgraded Deployment: args %q mounts %+v readiness %+v (want an HTTP probe with basic auth on too)", ct.Args, ct.VolumeMounts, ct.ReadinessProbe)
	}
	if _, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, "sh.helm.release.v1."+release+".v2", metav1.GetOptions{}); err != nil {
		t.Errorf("helm upgrade wrote no revision 2: %v", err)
	}

	// The kubelet's mount of the Secret, done by hand: its keys as files in a
	// folder, read back from the API.
	webDir := filepath.Join(dir, "web")
	if err := os.MkdirAll(webDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ws, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, dep.Spec.Template.Spec.Volumes[0].Secret.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range ws.Data {
		if err := os.WriteFile(filepath.Join(webDir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args, healthAddr = chartArgs(t, ct, webDir)
	a = c.StartAgent(t, append([]string{"--kubeconfig", kc}, args...)...)
	// The kubelet's view: the Deployment's probes, without credentials,
	// answer 503 until the caches sync, then 200 (never 401: no TCP check
	// standing in for readiness).
	waitProbedReady(t, ct, a, healthAddr, 2*time.Minute)
	base := "https://" + a.Addr
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool, ServerName: "driftwatch"}}}
	get := func(path, user, pw string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pw)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, _ := get("/readyz", "prometheus", pass)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent with the web config never became ready (last %d)\n%s", code, a.Logs())
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, p := range []string{"/metrics", "/", "/api/v1/findings", "/readyz", "/healthz", "/secret/" + namespace + "/dw-web"} {
		if code, _ := get(p, "", ""); code != http.StatusUnauthorized {
			t.Errorf("unauthenticated GET %s: %d, want 401", p, code)
		}
		if code, _ := get(p, "prometheus", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong password: %d, want 401", p, code)
		}
	}
	if code, body := get("/metrics", "prometheus", pass); code != 200 || !strings.Contains(body, "driftwatch_secret_absent{") {
		t.Errorf("authenticated scrape: %d", code)
	}
	if code, body := get("/?namespace="+app, "prometheus", pass); code != 200 || !strings.Contains(body, "never-created") ||
		strings.Contains(body, "/secret/") {
		t.Errorf("authenticated page: %d (with ui.secretPage=false it must link to no /secret/ page)", code)
	}
	// ui.secretPage=false: the Secret pages are off, for the authenticated too.
	if code, _ := get("/secret/"+app+"/never-created", "prometheus", pass); code != http.StatusNotFound {
		t.Errorf("ui.secretPage=false, authenticated GET /secret/: %d, want 404", code)
	}
	if resp, err := http.Get("http://" + a.Addr + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP still served /metrics: %.60q", b)
		}
	}

	// --- the chart's ServiceMonitor endpoint, scraped by the real Prometheus --
	sv, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	smYAML, err := c.Helm(ctx, append([]string{"template", release, chart, "--namespace", namespace, "--kube-version", sv.GitVersion,
		"--show-only", "templates/servicemonitor.yaml", "--set", "serviceMonitor.enabled=true"}, webValues...)...)
	if err != nil {
		t.Fatalf("helm template servicemonitor: %v", err)
	}
	promDir := c.TempDir(t, "prom")
	scrape := scrapeConfigFromServiceMonitor(t, c, ctx, []byte(smYAML), promDir, a.Addr)
	t.Logf("the ServiceMonitor endpoint as a Prometheus scrape config:\n%s", scrape)
	ps := promstack.StartPrometheus(t, c, promDir, scrape)
	deadline = time.Now().Add(90 * time.Second)
	var last string
	for {
		up, err1 := ps.Query(`up{job="driftwatch"}`)
		abs, err2 := ps.Query(`driftwatch_secret_absent{namespace="` + app + `",secret="never-created"}`)
		last = fmt.Sprintf("up=%v (%v) absent=%v (%v)", up, err1, abs, err2)
		if len(up) == 1 && up[0].Value[1] == "1" && len(abs) == 1 {
			t.Logf("fact: Prometheus scraped through the ServiceMonitor settings: %s", last)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape the protected agent with the ServiceMonitor's settings: %s\n%s", last, ps.Tail(30))
		}
		time.Sleep(time.Second)
	}
}

// scrapeConfigFromServiceMonitor translates the rendered ServiceMonitor's
// endpoint into a Prometheus scrape_configs entry, as prometheus-operator
// does: the target labels its relabelings add (namespace, service, pod,
// container, endpoint), honorLabels, scheme, path, interval, timeout, tlsConfig (CA from a Secret,
// serverName, insecureSkipVerify) and basicAuth (username and password from a
// Secret: the operator copies them; here they are read from the API into
// files in dir). The target is the agent's address (the Service's endpoint).
func scrapeConfigFromServiceMonitor(t *testing.T, c *cluster.Cluster, ctx context.Context, smYAML []byte, dir, target string) string {
	t.Helper()
	// Strict: an endpoint setting this translation does not know fails the
	// test instead of being dropped.
	var sm struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   json.RawMessage `json:"metadata"`
		Spec       struct {
			JobLabel          string          `json:"jobLabel"`
			NamespaceSelector json.RawMessage `json:"namespaceSelector"`
			Selector          json.RawMessage `json:"selector"`
			Endpoints         []struct {
				Port          string `json:"port"`
				Path          string `json:"path"`
				HonorLabels   bool   `json:"honorLabels"`
				Scheme        string `json:"scheme"`
				Interval      string `json:"interval"`
				ScrapeTimeout string `json:"scrapeTimeout"`
				TLSConfig     *struct {
					CA *struct {
						Secret *secretKey `json:"secret"`
					} `json:"ca"`
					ServerName         string `json:"serverName"`
					InsecureSkipVerify bool   `json:"insecureSkipVerify"`
				} `json:"tlsConfig"`
				BasicAuth *struct {
					Username secretKey `json:"username"`
					Password secretKey `json:"password"`
				} `json:"basicAuth"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(stripComments(smYAML), &sm); err != nil {
		t.Fatalf("the rendered ServiceMonitor: %v\n%s", err, smYAML)
	}
	if sm.Kind != "ServiceMonitor" || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("want one ServiceMonitor endpoint:\n%s", smYAML)
	}
	ep := sm.Spec.Endpoints[0]
	secret := func(ref secretKey) []byte {
		s, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ServiceMonitor names Secret %s: %v", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			t.Fatalf("Secret %s has no key %s", ref.Name, ref.Key)
		}
		return v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  - job_name: driftwatch\n    metrics_path: %s\n    scrape_interval: %s\n    scrape_timeout: %s\n", ep.Path, ep.Interval, ep.ScrapeTimeout)
	if ep.Scheme != "" {
		fmt.Fprintf(&b, "    scheme: %s\n", ep.Scheme)
	}
	if tc := ep.TLSConfig; tc != nil {
		b.WriteString("    tls_config:\n")
		if tc.CA != nil && tc.CA.Secret != nil {
			p := filepath.Join(dir, "ca.crt")
			if err := os.WriteFile(p, secret(*tc.CA.Secret), 0o600); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "      ca_file: %s\n", p)
		}
		if tc.ServerName != "" {
			fmt.Fprintf(&b, "      server_name: %s\n", tc.ServerName)
		}
		fmt.Fprintf(&b, "      insecure_skip_verify: %v\n", tc.InsecureSkipVerify)
	}
	if ba := ep.BasicAuth; ba != nil {
		p := filepath.Join(dir, "password")
		if err := os.WriteFile(p, secret(ba.Password), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "    basic_auth:\n      username: %q\n      password_file: %s\n", secret(ba.Username), p)
	}
	fmt.Fprintf(&b, "    honor_labels: %v\n", ep.HonorLabels)
	// The target labels prometheus-operator's relabelings give every
	// ServiceMonitor target (namespace, service, pod, container, endpoint):
	// the agent's series carry namespace, pod and container of their own.
	fmt.Fprintf(&b, "    static_configs:\n      - targets: ['%s']\n        labels: {namespace: %q, service: driftwatch, pod: driftwatch-0, container: driftwatch, endpoint: %s}\n",
		target, namespace, ep.Port)
	return b.String()
}

type secretKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) || bytes.Equal(bytes.TrimSpace(l), []byte("---")) {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

func buildPlugin(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(c.TempDir(t, "plugin"), "kubectl-driftwatch")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-driftwatch")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kubectl-driftwatch: %v\n%s", err, out)
	}
	return bin
}

func runWith(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out), 0
}

type pki struct {
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool
}

// newPKI makes a CA and a serving certificate for "driftwatch" and 127.0.0.1.
func newPKI(t *testing.T) pki {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "driftwatch-e2e-web-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "driftwatch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"driftwatch"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	return p
}

func ptr[T any](v T) *T { return &v }

// chartArgs turns the chart's container arguments into those of a local
// agent: --listen is StartAgent's, --health-probe-bind-address moves to a free
// port of 127.0.0.1 (returned), --web.config.file to webDir (the kubelet's
// mount, written by the test); everything else is kept as the chart renders it.
func chartArgs(t *testing.T, ct corev1.Container, webDir string) (args []string, healthAddr string) {
	t.Helper()
	for _, a := range ct.Args {
		switch name, v, _ := strings.Cut(a, "="); name {
		case "--listen":
		case "--health-probe-bind-address":
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			healthAddr = ln.Addr().String()
			ln.Close()
			args = append(args, name+"="+healthAddr)
		case "--web.config.file":
			args = append(args, name+"="+filepath.Join(webDir, filepath.Base(v)))
		default:
			args = append(args, a)
		}
	}
	if healthAddr == "" {
		t.Fatalf("the chart's container has no --health-probe-bind-address: %q", ct.Args)
	}
	return args, healthAddr
}

// kubeletProbe runs a probe of the chart's container the way the kubelet
// does: an HTTP GET (scheme, path, port by name or number) without
// credentials, certificates not verified; the container's port is the local
// agent's (main, or the probe address the --health-probe-bind-address port
// moved to). A probe that is not an HTTP GET fails the test.
func kubeletProbe(t *testing.T, ct corev1.Container, p *corev1.Probe, a *cluster.Agent, healthAddr string) (int, error) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Fatalf("probe %+v is not an HTTP GET: readiness would not wait for the caches", p)
	}
	port := p.HTTPGet.Port.IntVal
	if p.HTTPGet.Port.StrVal != "" {
		for _, cp := range ct.Ports {
			if cp.Name == p.HTTPGet.Port.StrVal {
				port = cp.ContainerPort
			}
		}
	}
	var addr string
	for _, arg := range ct.Args {
		if v, ok := strings.CutPrefix(arg, "--health-probe-bind-address="); ok && v == fmt.Sprintf(":%d", port) {
			addr = healthAddr
		}
		if v, ok := strings.CutPrefix(arg, "--listen="); ok && v == fmt.Sprintf(":%d", port) {
			addr = a.Addr
		}
	}
	if addr == "" {
		t.Fatalf("probe port %s (%d) is no listener of the agent's arguments %q", p.HTTPGet.Port.String(), port, ct.Args)
	}
	scheme := strings.ToLower(string(p.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(scheme + "://" + addr + p.HTTPGet.Path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitProbedReady runs the chart's readiness probe until it passes (the
// kubelet counts 200-399 as success): before that it may only fail the way a
// syncing agent does (503, or no answer yet), never 401. Liveness passes too.
func waitProbedReady(t *testing.T, ct corev1.Container, a *cluster.Agent, healthAddr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []string
	for {
		code, err := kubeletProbe(t, ct, ct.ReadinessProbe, a, healthAddr)
		if n := len(seen); n == 0 || seen[n-1] != fmt.Sprint(code) {
			seen = append(seen, fmt.Sprint(code))
		}
		if code >= 200 && code < 400 {
			break
		}
		if err == nil && code != http.StatusServiceUnavailable {
			t.Fatalf("the chart's readiness probe got %d before the agent was ready (answers so far %v)", code, seen)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chart's readiness probe never passed: answers %v, last error %v\n%s", seen, err, a.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, err := kubeletProbe(t, ct, ct.LivenessProbe, a, healthAddr); code != http.StatusOK {
		t.Errorf("the chart's liveness probe: %d %v", code, err)
	}
	t.Logf("fact: the chart's readiness probe (%s %s on port %s) answered %v without credentials",
		ct.ReadinessProbe.HTTPGet.Scheme, ct.ReadinessProbe.HTTPGet.Path, ct.ReadinessProbe.HTTPGet.Port.String(), seen)
}

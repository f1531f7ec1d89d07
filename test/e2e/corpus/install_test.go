package corpus

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
	"github.com/driftwatch/driftwatch/test/e2e/cluster/tools"
)

var (
	docSep  = regexp.MustCompile(`(?m)^---[ \t]*$`)
	crdKind = regexp.MustCompile(`(?m)^kind: CustomResourceDefinition[ \t]*$`)
)

// installArgoCD applies Argo CD's stock install.yaml as its documentation
// says (kubectl create namespace argocd; kubectl apply -n argocd -f
// install.yaml), with the CRDs server-side: client-side apply fails on their
// last-applied annotation's size.
func (r *run) installArgoCD() {
	r.t.Helper()
	path, err := tools.UpstreamPath(tools.ArgoCDInstallFile)
	if err != nil {
		r.t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	var crds, rest []string
	for _, d := range docSep.Split(string(b), -1) {
		switch {
		case strings.TrimSpace(d) == "":
		case crdKind.MatchString(d):
			crds = append(crds, d)
		default:
			rest = append(rest, d)
		}
	}
	if len(crds) != 3 || len(rest) < 50 {
		r.t.Fatalf("%s: %d CRDs and %d other objects; want Argo CD v2.14.21's 3 CRDs and its ~60 objects", path, len(crds), len(rest))
	}
	r.argo.crds, r.argo.rest = strings.Join(crds, "---"), strings.Join(rest, "---")
	r.step("Argo CD v2.14.21 install.yaml: %d CRDs (kubectl apply --server-side), %d objects (kubectl apply -n %s)", len(crds), len(rest), argoNS)
	r.kubectl("", "create", "namespace", argoNS)
	r.kubectl(r.argo.crds, "apply", "--server-side", "-f", "-")
	// kubectl wait fails at once ("accessor error") when the apiserver has not
	// written any condition yet, which a loaded machine shows: retry until the
	// CRDs have conditions.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := r.c.Kubectl(r.ctx, "", "wait", "--for=condition=Established", "--timeout=60s",
			"crd/applications.argoproj.io", "crd/applicationsets.argoproj.io", "crd/appprojects.argoproj.io")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	r.kubectl(r.argo.rest, "apply", "-n", argoNS, "-f", "-")
}

// installESOObjects applies the ExternalSecrets and their store, and waits
// until the real ESO controller reports both Ready. They go in before the
// chart: its ValidatingWebhookConfigurations (failurePolicy Fail, CREATE,
// UPDATE and DELETE) point at a webhook Service no pod serves here (no
// kubelet), so once the chart is installed the apiserver rejects every write
// to ExternalSecrets and SecretStores (and the app namespace cannot be
// deleted; the stack's teardown removes it).
func (r *run) installESOObjects() {
	r.t.Helper()
	r.step("ExternalSecrets db-creds (Owner) and none-policy (creationPolicy None) in %s", r.ns)
	r.kubectl(esoObjects, "apply", "-n", r.ns, "-f", "-")
	for _, name := range []string{"db-creds", "none-policy"} {
		r.waitFor("ExternalSecret "+name+" Ready=True", 2*time.Minute, func() (bool, error) {
			u, err := r.c.Dynamic.Resource(esGVR).Namespace(r.ns).Get(r.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Ready" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, fmt.Errorf("conditions %v", conds)
		})
	}
	if _, err := r.c.Client.CoreV1().Secrets(r.ns).Get(r.ctx, "none-target", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		r.t.Errorf("fact changed: ESO with creationPolicy None created or failed to report its target (get: %v)", err)
	}
}

// installESOChart installs ESO's chart with the real helm (a real release
// Secret), starts ESO's cert-controller as the chart's cert-controller
// Deployment would run it, and waits until it has filled the webhook Secret.
func (r *run) installESOChart() {
	r.t.Helper()
	chart, err := tools.UpstreamPath(tools.ESOChartDir)
	if err != nil {
		r.t.Fatal(err)
	}
	r.chart = chart
	r.step("helm install %s (ESO v0.20.4 chart, installCRDs=false: the stack installed the same CRDs) into %s", esoRelease, esoNS)
	r.helm("install", esoRelease, chart, "-n", esoNS, "--create-namespace", "--set", "installCRDs=false")

	bin, err := tools.Tool(tools.ESOControllerBin)
	if err != nil {
		r.t.Fatal(err)
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		r.t.Fatal(err)
	}
	// The chart's cert-controller arguments (templates/cert-controller-deployment.yaml
	// with the default values); addresses on loopback. No leader election: one replica.
	p := r.c.StartProcess(r.t, "eso-cert-controller", bin, []string{"KUBECONFIG=" + r.c.AdminKubeconfig},
		"certcontroller",
		"--crd-requeue-interval=5m",
		"--service-name="+webhookSecret,
		"--service-namespace="+esoNS,
		"--secret-name="+webhookSecret,
		"--secret-namespace="+esoNS,
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--healthz-addr=127.0.0.1:%d", ports[1]),
		"--loglevel=info",
		"--zap-time-encoding=epoch",
	)
	r.waitFor("the cert-controller to fill Secret "+esoNS+"/"+webhookSecret, 2*time.Minute, func() (bool, error) {
		if gone, err := p.Exited(); gone {
			r.t.Fatalf("the cert-controller exited (%v):\n%s", err, p.Tail(40))
		}
		s, err := r.c.Client.CoreV1().Secrets(esoNS).Get(r.ctx, webhookSecret, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && len(s.Data["ca.crt"]) > 0, nil
	})
	r.step("the cert-controller filled the webhook Secret")
}

// markRunning gives every pod matching selector in ns (at least want) the
// status a kubelet would write once its containers started now.
func (r *run) markRunning(ns, selector string, want int) {
	r.t.Helper()
	r.c.MarkPodsRunning(r.t, ns, selector, want)
}

// startArgoCD: with argocd-redis there, Argo CD's pods start, and
// argocd-server initialises its settings. argocd-server cannot run here (no
// kubelet); what it writes is taken from its source (v2.14.21
// util/settings/settings.go InitializeSettings): the admin account is saved
// (Get + Update of argocd-secret adding admin.password and
// admin.passwordMtime), the initial password goes into a new
// argocd-initial-admin-secret (key password), then SaveSettings Updates
// argocd-secret adding server.secretkey and the generated tls.crt/tls.key.
// Its client-go user agent, so its field manager, is the binary's name.
func (r *run) startArgoCD() {
	r.t.Helper()
	r.step("Argo CD's pods start; argocd-server initialises argocd-secret (as its source does)")
	for _, name := range []string{"argocd-server", "argocd-repo-server", "argocd-redis", "argocd-dex-server",
		"argocd-applicationset-controller", "argocd-notifications-controller", "argocd-application-controller"} {
		r.markRunning(argoNS, "app.kubernetes.io/name="+name, 1)
	}
	secrets := r.c.Client.CoreV1().Secrets(argoNS)
	update := func(add map[string]string) {
		s := r.secret(argoNS, "argocd-secret")
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range add {
			s.Data[k] = []byte(v)
		}
		if _, err := secrets.Update(r.ctx, s, metav1.UpdateOptions{FieldManager: "argocd-server"}); err != nil {
			r.t.Fatal(err)
		}
	}
	if _, err := secrets.Create(r.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-initial-admin-secret"},
		Data:       map[string][]byte{"password": []byte("corpus-initial-admin")},
	}, metav1.CreateOptions{FieldManager: "argocd-server"}); err != nil {
		r.t.Fatal(err)
	}
	update(map[string]string{"admin.password": "$2a$10$corpus.hash", "admin.passwordMtime": time.Now().UTC().Format(time.RFC3339)})
	update(map[string]string{"server.secretkey": "corpus-signature-0123456789abcdef", "tls.crt": "corpus-cert", "tls.key": "corpus-key"})
	r.fact("after argocd-server's initialisation: %s", secretFacts(r.ctx, r.c, argoNS, "argocd-secret"))
}

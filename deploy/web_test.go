package deploy

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A web configuration from a Secret: mounted read-only, passed as
// --web.config.file, probes and the ServiceMonitor follow its TLS and basic
// auth; the page can be switched off. (The e2e test/e2e/chart installs it.)
func TestChartWebConfig(t *testing.T) {
	objs := render(t, "--set", "web.configSecret=dw-web", "--set", "web.tls=true", "--set", "web.basicAuth=true",
		"--set", "serviceMonitor.enabled=true", "--set", "ui.enabled=false",
		"--set", "serviceMonitor.tlsConfig.insecureSkipVerify=true",
		"--set", "serviceMonitor.basicAuth.username.name=dw-scrape", "--set", "serviceMonitor.basicAuth.username.key=username",
		"--set", "serviceMonitor.basicAuth.password.name=dw-scrape", "--set", "serviceMonitor.basicAuth.password.key=password")
	d := byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	for _, a := range []string{"--web.config.file=/etc/driftwatch/web/web-config.yml", "--ui=false"} {
		if !contains(c.Args, a) {
			t.Errorf("args %q lack %s", c.Args, a)
		}
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/driftwatch/web" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != "dw-web" {
		t.Errorf("volumes %+v", spec.Volumes)
	}
	// Basic auth on the metrics port: the probes stay HTTP GETs, on the
	// probe port that needs no credentials (not TCP checks, which call a pod
	// Ready before its caches sync).
	checkProbes(t, "basic auth", c)
	sm := byKind(objs, "ServiceMonitor")[0].obj.(*serviceMonitor)
	ep := sm.Spec.Endpoints[0]
	if ep.Scheme != "https" || !reflect.DeepEqual(ep.TLSConfig, map[string]any{"insecureSkipVerify": true}) ||
		ep.BasicAuth["password"] == nil || ep.BasicAuth["username"] == nil {
		t.Errorf("ServiceMonitor endpoint: scheme %q tlsConfig %v basicAuth %v", ep.Scheme, ep.TLSConfig, ep.BasicAuth)
	}

	// TLS without basic auth, and a probe port of one's choosing: plain HTTP
	// on the probe port.
	objs = render(t, "--set", "web.configSecret=dw-web", "--set", "web.tls=true", "--set", "health.port=9100")
	c = byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	checkProbes(t, "TLS", c)
	if c.Ports[1].ContainerPort != 9100 {
		t.Errorf("health.port=9100: ports %+v", c.Ports)
	}
	// The Service exposes the metrics port only: the probes are the kubelet's.
	if svc := byKind(objs, "Service")[0].obj.(*corev1.Service); len(svc.Spec.Ports) != 1 {
		t.Errorf("Service ports %+v", svc.Spec.Ports)
	}
	// ui.secretPage=false turns /secret/ off alone; with the page off entirely
	// there is nothing more to say (TestChartSecretPage: the other values).
	objs = render(t, "--set", "ui.secretPage=false")
	c = byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if !contains(c.Args, "--ui.secret-page=false") || contains(c.Args, "--ui=false") {
		t.Errorf("ui.secretPage=false: args %q", c.Args)
	}
	c = byKind(render(t, "--set", "ui.enabled=false", "--set", "ui.secretPage=false"), "Deployment")[0].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--ui.secret-page") {
			t.Errorf("ui.enabled=false: args %q: --ui.secret-page is for ui.enabled=true only", c.Args)
		}
	}
	// web.tls alone, without a Secret, changes nothing.
	objs = render(t, "--set", "web.tls=true", "--set", "serviceMonitor.enabled=true")
	if ep := byKind(objs, "ServiceMonitor")[0].obj.(*serviceMonitor).Spec.Endpoints[0]; ep.Scheme != "" {
		t.Errorf("no web config, yet scheme %q", ep.Scheme)
	}
}

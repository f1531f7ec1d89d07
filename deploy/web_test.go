package deploy

import (
	"reflect"
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
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.TCPSocket == nil || p.TCPSocket.Port.String() != "metrics" || p.HTTPGet != nil {
			t.Errorf("with basic auth the probes must be TCP checks: %+v", p)
		}
	}
	sm := byKind(objs, "ServiceMonitor")[0].obj.(*serviceMonitor)
	ep := sm.Spec.Endpoints[0]
	if ep.Scheme != "https" || !reflect.DeepEqual(ep.TLSConfig, map[string]any{"insecureSkipVerify": true}) ||
		ep.BasicAuth["password"] == nil || ep.BasicAuth["username"] == nil {
		t.Errorf("ServiceMonitor endpoint: scheme %q tlsConfig %v basicAuth %v", ep.Scheme, ep.TLSConfig, ep.BasicAuth)
	}

	// TLS without basic auth: HTTPS probes on the real endpoints.
	objs = render(t, "--set", "web.configSecret=dw-web", "--set", "web.tls=true")
	c = byKind(objs, "Deployment")[0].obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	if p := c.ReadinessProbe; p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Path != "/readyz" {
		t.Errorf("TLS readiness probe %+v", p)
	}
	// web.tls alone, without a Secret, changes nothing.
	objs = render(t, "--set", "web.tls=true", "--set", "serviceMonitor.enabled=true")
	if ep := byKind(objs, "ServiceMonitor")[0].obj.(*serviceMonitor).Spec.Endpoints[0]; ep.Scheme != "" {
		t.Errorf("no web config, yet scheme %q", ep.Scheme)
	}
}

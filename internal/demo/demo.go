// Package demo is an embedded simulated cluster for `agent --demo`: client-go fake
// clientsets seeded with one example of every failure class driftwatch detects,
// next to healthy objects that must never show up in a finding.
package demo

import (
	"context"
	"log/slog"
	"strconv"
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
	"github.com/driftwatch/driftwatch/internal/helmpayload"
)

// Demo is a simulated cluster.
type Demo struct {
	log *slog.Logger
	cs  *fake.Clientset
	dyn *dynamicfake.FakeDynamicClient
	now time.Time
}

var (
	gvrES  = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	gvrSS  = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}
	gvrCSS = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}
	gvrApp = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// New seeds the simulated cluster.
func New(log *slog.Logger) *Demo {
	d := &Demo{log: log, now: time.Now()}
	core, dyn := Scenario(d.now)
	d.cs = fake.NewClientset(core...)
	fd := d.cs.Discovery().(*fakediscovery.FakeDiscovery)
	fd.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "secrets", Namespaced: true, Kind: "Secret"},
			{Name: "pods", Namespaced: true, Kind: "Pod"}, {Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount"}}},
		{GroupVersion: "external-secrets.io/v1", APIResources: []metav1.APIResource{
			{Name: "externalsecrets", Namespaced: true, Kind: "ExternalSecret"},
			{Name: "secretstores", Namespaced: true, Kind: "SecretStore"},
			{Name: "clustersecretstores", Namespaced: false, Kind: "ClusterSecretStore"}}},
		{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "applications", Namespaced: true, Kind: "Application"}}},
		{GroupVersion: "kustomize.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{
			{Name: "kustomizations", Namespaced: true, Kind: "Kustomization"}}},
		{GroupVersion: "source.toolkit.fluxcd.io/v1", APIResources: []metav1.APIResource{
			{Name: "gitrepositories", Namespaced: true, Kind: "GitRepository"},
			{Name: "ocirepositories", Namespaced: true, Kind: "OCIRepository"},
			{Name: "buckets", Namespaced: true, Kind: "Bucket"}}},
	}
	scheme := runtime.NewScheme()
	d.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		gvrES: "ExternalSecretList", gvrSS: "SecretStoreList", gvrCSS: "ClusterSecretStoreList", gvrApp: "ApplicationList",
		gvrKS: "KustomizationList", gvrGit: "GitRepositoryList", gvrOCI: "OCIRepositoryList", gvrBkt: "BucketList",
	}, dyn...)
	return d
}

// Clients returns the fake clients for the agent.
func (d *Demo) Clients() agent.Clients {
	return agent.Clients{Core: d.cs, Dynamic: d.dyn, Discovery: d.cs.Discovery()}
}

// Run drives the scenario's changes over time until ctx ends.
func (d *Demo) Run(ctx context.Context) {
	for _, a := range activities {
		go a(ctx, d)
	}
	<-ctx.Done()
}

// Core is the simulated cluster's clientset, for activities that change objects.
func (d *Demo) Core() *fake.Clientset { return d.cs }

// Dynamic is the simulated cluster's dynamic client.
func (d *Demo) Dynamic() *dynamicfake.FakeDynamicClient { return d.dyn }

func meta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}
}

func secret(ns, name string, data map[string]string, ann map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: meta(ns, name), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	s.Annotations = ann
	return s
}

// EnvRef is one env var of a demo pod.
type envRef struct {
	secret, key string
	optional    bool
}

func pod(ns, name, deployment string, started time.Time, env []envRef, envFrom []string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(ns, name)}
	if deployment != "" {
		hash := "5d8f7c9b4"
		p.Labels = map[string]string{"pod-template-hash": hash, "app": deployment}
		t := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash, UID: "rs", Controller: &t}}
	}
	c := corev1.Container{Name: "app", Image: "example/app:1"}
	for _, e := range env {
		opt := e.optional
		c.Env = append(c.Env, corev1.EnvVar{Name: e.key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: e.secret}, Key: e.key, Optional: &opt}}})
	}
	for _, s := range envFrom {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	p.Spec.Containers = []corev1.Container{c}
	st := metav1.NewTime(started)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &st,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: st}}}}}
	return p
}

func unstr(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

func externalSecret(ns, name string, spec map[string]any, ready, reason string, refreshed time.Time) *unstructured.Unstructured {
	status := map[string]any{}
	if ready != "" {
		status["conditions"] = []any{map[string]any{"type": "Ready", "status": ready, "reason": reason,
			"lastTransitionTime": refreshed.UTC().Format(time.RFC3339)}}
	}
	if !refreshed.IsZero() {
		status["refreshTime"] = refreshed.UTC().Format(time.RFC3339)
	}
	return unstr(map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-es-" + ns + "-" + name},
		"spec":     spec, "status": status,
	})
}

func esData(keys ...string) []any {
	var out []any
	for _, k := range keys {
		out = append(out, map[string]any{"secretKey": k, "remoteRef": map[string]any{"key": "demo/" + k}})
	}
	return out
}

func store(kind, ns, name string, provider map[string]any, ready, reason string) *unstructured.Unstructured {
	md := map[string]any{"name": name, "uid": "uid-store-" + name}
	if ns != "" {
		md["namespace"] = ns
	}
	return unstr(map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": kind, "metadata": md,
		"spec":   map[string]any{"provider": provider},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": reason}}},
	})
}

// helmRelease builds a Helm v3 release Secret whose rendered manifest is manifest.
func helmRelease(ns, release string, revision int, status, manifest string) *corev1.Secret {
	s := helmpayload.Release{Name: release, Namespace: ns, Version: revision, Status: status, Manifest: manifest}.Secret()
	labels := s.Labels
	s.ObjectMeta = meta(ns, s.Name) // the demo's UIDs
	s.Labels = labels
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

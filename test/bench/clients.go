package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/test/e2e/cluster"
)

type kubernetesClient = kubernetes.Interface

func clients(rc *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	return cs, dyn, err
}

// installStore creates the ClusterSecretStore "vault" the ExternalSecrets use
// (fake provider) with a Ready status, so the stores are healthy.
func installStore(ctx context.Context, cl *cluster.Cluster) error {
	gvr := schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "clustersecretstores"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
		"metadata": map[string]any{"name": "vault"},
		"spec": map[string]any{"provider": map[string]any{"fake": map[string]any{"data": []any{
			map[string]any{"key": "prod/x", "value": "y"}}}}},
	}}
	got, err := cl.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	got.Object["status"] = map[string]any{"capabilities": "ReadWrite", "conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Valid", "message": "store validated"}}}
	if _, err := cl.Dynamic.Resource(gvr).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}

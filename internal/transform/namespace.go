package transform

// The Namespace transform: the driftwatch.io/ignore annotation.

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

// Namespace is the transform of the Namespace informer: the name and the
// driftwatch.io/ignore annotation.
func (t *Transformer) Namespace(obj any) (any, error) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	m := model.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}
	if v, ok := n.Annotations[model.AnnIgnore]; ok {
		if len(v) > maxKeptValue {
			v = strings.Clone(v[:maxKeptValue])
		}
		m.Annotations = map[string]string{model.AnnIgnore: v}
	}
	return &model.Namespace{ObjectMeta: m}, nil
}

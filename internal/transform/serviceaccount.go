package transform

// The ServiceAccount transform: the workload-identity annotations.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
)

// ServiceAccount is the transform of the ServiceAccount informer.
func (t *Transformer) ServiceAccount(obj any) (any, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return obj, nil
	}
	return &model.ServiceAccount{ObjectMeta: objectMeta(&sa.ObjectMeta)}, nil
}

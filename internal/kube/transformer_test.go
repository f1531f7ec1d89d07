package kube

import (
	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/transform"
)

func newTransformer() *transform.Transformer {
	return &transform.Transformer{FP: model.NewFingerprinterWithKey([]byte("test-key"))}
}

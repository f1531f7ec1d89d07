package transform

// The Helm release transform: decode the payload, extract the expectations,
// drop the payload.

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/model"
	"github.com/driftwatch/driftwatch/internal/parse"
)

// HelmReleaseType is the Secret type Helm v3 stores releases in.
const HelmReleaseType = "helm.sh/release.v1"

// HelmRelease is the transform of the Helm release informer: decode the payload,
// extract the expectations, drop the payload.
func (t *Transformer) HelmRelease(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	if s.Type != HelmReleaseType {
		// Not a release: the apiserver's field selector keeps these out, a fake
		// client does not. A stub, which the handlers ignore, keeps such Secrets
		// out of the model's releases (whose changes invalidate every namespace).
		s.Data = nil
		return Stub(&s.ObjectMeta), nil
	}
	rec := &model.HelmRelease{
		ObjectMeta: objectMeta(&s.ObjectMeta),
		Release:    s.Labels["name"],
		Status:     model.Intern(s.Labels["status"]),
	}
	rec.Revision, _ = strconv.Atoi(s.Labels["version"])
	info, exps, err := parse.HelmReleaseFromSecretData(s.Data)
	if err != nil {
		rec.DecodeErr = err.Error()
		t.decodeProblem("helmreleases", &s.ObjectMeta, "release", rec.DecodeErr)
	} else {
		rec.Expectations = exps
		if rec.Release == "" {
			rec.Release = info.Name
		}
		if rec.Revision == 0 {
			rec.Revision = info.Revision
		}
		if rec.Status == "" {
			rec.Status = info.Status
		}
		rec.StampExpectations()
	}
	for _, v := range s.Data {
		clear(v)
	}
	s.Data = nil
	return rec, nil
}

// Package helmpayload builds Helm v3 release Secrets as Helm's storage driver
// writes them: the release JSON, gzip, base64, under the Secret's "release"
// key, with Helm's labels. One builder for the demo's simulated cluster, the
// tests and the benchmarks (it was written out in each of them). Parser edge
// cases (no gzip, a second base64 layer) are internal/parse's own helpers.
package helmpayload

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretType is the type of a Helm v3 release Secret.
const SecretType = "helm.sh/release.v1"

// Release is what goes into a payload.
type Release struct {
	Name      string
	Namespace string
	Version   int
	// Status is info.status ("deployed" when empty).
	Status   string
	Manifest string
	// Chart, when set, is the release's "chart" object (metadata and the
	// like), as real releases carry.
	Chart map[string]any
}

// Payload is the value of the release Secret's "release" key:
// base64(gzip(JSON)).
func (r Release) Payload() []byte {
	status := r.Status
	if status == "" {
		status = "deployed"
	}
	rel := map[string]any{"name": r.Name, "namespace": r.Namespace, "version": r.Version,
		"info": map[string]any{"status": status}, "manifest": r.Manifest}
	if r.Chart != nil {
		rel["chart"] = r.Chart
	}
	body, err := json.Marshal(rel)
	if err != nil {
		panic(err) // strings, ints and maps of them always marshal
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(body)
	_ = w.Close()
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))
}

// Secret is the release Secret: sh.helm.release.v1.<name>.v<version> in the
// release's namespace, type helm.sh/release.v1, Helm's owner/name/status/version
// labels.
func (r Release) Secret() *corev1.Secret {
	status := r.Status
	if status == "" {
		status = "deployed"
	}
	v := strconv.Itoa(r.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "sh.helm.release.v1." + r.Name + ".v" + v,
			Labels: map[string]string{"owner": "helm", "name": r.Name, "status": status, "version": v}},
		Type: SecretType,
		Data: map[string][]byte{"release": r.Payload()},
	}
}

package parse

import (
	"encoding/base64"
	"strings"
	"testing"
)

// benchChart is the chart test/bench deploys: six documents, one Secret and one
// ExternalSecret, the chart's template stored beside the manifest as Helm does.
const benchChart = `---
# Source: app/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: rel
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: rel, helm.sh/chart: app-1.4.2}
---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: rel-config
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: rel}
type: Opaque
data:
  DATABASE_URL: cG9zdGdyZXM6Ly91c2VyOnBhc3NAZGI6NTQzMi9hcHA=
  REDIS_URL: cmVkaXM6Ly9yZWRpczo2Mzc5LzA=
  SESSION_KEY: c2Vzc2lvbi1rZXktMTIzNDU2Nzg5MA==
---
# Source: app/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: rel
data:
  app.yaml: |
    server:
      port: 8080
      readTimeout: 30s
    logging:
      level: info
---
# Source: app/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: rel
spec:
  type: ClusterIP
  ports:
  - {port: 80, targetPort: http, protocol: TCP, name: http}
---
# Source: app/templates/externalsecret.yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: rel-vault
spec:
  refreshInterval: 1h
  secretStoreRef: {name: vault, kind: ClusterSecretStore}
  target: {name: rel-vault}
  data:
  - {secretKey: API_TOKEN, remoteRef: {key: prod/rel/api-token}}
  - {secretKey: SIGNING_KEY, remoteRef: {key: prod/rel/signing-key}}
---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rel
spec:
  replicas: 3
  template:
    spec:
      serviceAccountName: rel
      containers:
      - name: app
        image: "registry.example.com/team/app:1.4.2"
        envFrom:
        - secretRef: {name: rel-config}
        resources:
          limits: {cpu: 500m, memory: 512Mi}
`

func BenchmarkHelmReleaseBenchChart(b *testing.B) {
	rel := helmRel("rel", "ns", 3, "deployed", benchChart)
	rel["chart"].(map[string]any)["templates"] = []any{map[string]any{"name": "templates/all.yaml",
		"data": base64.StdEncoding.EncodeToString([]byte(strings.Repeat(benchChart, 2)))}}
	payload := helmPayload(b, rel, true, true)
	b.ReportAllocs()
	for b.Loop() {
		_, exps, err := HelmRelease(payload)
		if err != nil || len(exps) != 2 {
			b.Fatal(err, len(exps))
		}
	}
}

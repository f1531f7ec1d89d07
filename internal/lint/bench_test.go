package lint

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// rendering returns n documents as `helm template` renders an app: per
// instance a Deployment reading three keys, an ExternalSecret writing two of
// them (no creationPolicy), a Secret manifest, and a Service.
func rendering(n int) string {
	var b strings.Builder
	for i := 0; len(b.String()) == 0 || i*4 < n; i++ {
		fmt.Fprintf(&b, `---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
  namespace: ns-%[2]d
  labels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: app-%[1]d}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/instance: app-%[1]d}
  template:
    metadata:
      labels: {app.kubernetes.io/instance: app-%[1]d}
    spec:
      serviceAccountName: app
      containers:
        - name: app
          image: registry.example/app:1.2.3
          ports: [{containerPort: 8080}]
          env:
            - {name: DB_USER, valueFrom: {secretKeyRef: {name: app-%[1]d-db, key: username}}}
            - {name: DB_PASSWORD, valueFrom: {secretKeyRef: {name: app-%[1]d-db, key: password}}}
            - {name: DB_URL, valueFrom: {secretKeyRef: {name: app-%[1]d-db, key: url}}}
          envFrom:
            - secretRef: {name: app-%[1]d-config}
          volumeMounts: [{name: tls, mountPath: /tls}]
      volumes:
        - name: tls
          secret: {secretName: app-%[1]d-config, items: [{key: tls.crt, path: tls.crt}]}
---
# Source: app/templates/externalsecret.yaml
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: app-%[1]d-db
  namespace: ns-%[2]d
spec:
  refreshInterval: 1h
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target: {name: app-%[1]d-db}
  data:
    - {secretKey: username, remoteRef: {key: app/%[1]d/db, property: username}}
    - {secretKey: password, remoteRef: {key: app/%[1]d/db, property: password}}
---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: app-%[1]d-config
  namespace: ns-%[2]d
type: Opaque
data:
  tls.crt: %[3]s
  feature.flags: ZmxhZ3M9b24=
---
# Source: app/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: app-%[1]d
  namespace: ns-%[2]d
spec:
  selector: {app.kubernetes.io/instance: app-%[1]d}
  ports: [{port: 80, targetPort: 8080}]
`, i, i%20, base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("certificate %d", i))))
	}
	return b.String()
}

// BenchmarkLint1000Documents reads and checks 1,000 rendered documents: the
// whole of agent lint but the output.
func BenchmarkLint1000Documents(b *testing.B) {
	src := []byte(rendering(1000))
	docs, _ := ParseStream("r.yaml", src)
	if len(docs) != 1000 {
		b.Fatalf("%d documents", len(docs))
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		docs, probs := ParseStream("r.yaml", src)
		r := Evaluate(&Input{Docs: docs, Problems: probs, Files: 1}, Options{})
		if len(r.Findings) != 3*250 || len(r.Problems) != 0 { // per app: a missing key, an implicit creationPolicy, data in a manifest
			b.Fatalf("%d findings, %d problems", len(r.Findings), len(r.Problems))
		}
	}
}

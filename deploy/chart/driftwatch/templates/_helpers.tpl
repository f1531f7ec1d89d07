{{/* Names and labels. */}}
{{- define "driftwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "driftwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "driftwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "driftwatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "driftwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: driftwatch
{{- end }}

{{- define "driftwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "driftwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "driftwatch.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The namespaces the agent watches: explicit, else the namespaced-RBAC list. */}}
{{- define "driftwatch.namespaces" -}}
{{- if .Values.namespaces }}
{{- join "," .Values.namespaces }}
{{- else if .Values.rbac.namespaced }}
{{- join "," .Values.rbac.namespaces }}
{{- end }}
{{- end }}

{{/*
The read-only rules: exactly those of deploy/manifests/clusterrole.yaml
(deploy/deploy_test.go asserts it). "namespaced" drops the cluster-scoped resources.
*/}}
{{- define "driftwatch.rules" -}}
- apiGroups: [""]
  resources: ["secrets", "pods", "serviceaccounts"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["external-secrets.io"]
  {{- if .namespaced }}
  resources: ["externalsecrets", "secretstores"]
  {{- else }}
  resources: ["externalsecrets", "secretstores", "clustersecretstores"]
  {{- end }}
  verbs: ["get", "list", "watch"]
- apiGroups: ["argoproj.io"]
  resources: ["applications"]
  verbs: ["get", "list", "watch"]
# Flux: Kustomizations (get: their spec is read at build time) and the
# sources whose artifacts they apply.
- apiGroups: ["kustomize.toolkit.fluxcd.io"]
  resources: ["kustomizations"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["source.toolkit.fluxcd.io"]
  resources: ["gitrepositories", "ocirepositories", "buckets", "externalartifacts"]
  verbs: ["get", "list", "watch"]
{{- if not .namespaced }}
# Namespaces: only for their driftwatch.io/ignore annotation.
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- end }}

{{/*
"true" when the metrics port asks every client for credentials: a web
configuration Secret that sets basic auth, or TLS with verified client
certificates. web.* describe that Secret's content; without the Secret they
configure nothing.
*/}}
{{- define "driftwatch.webAuth" -}}
{{- if and .Values.web.clientAuth (not .Values.web.tls) }}
{{- fail "web.clientAuth: client certificates are part of TLS (tls_server_config.client_auth_type): set web.tls=true as well" }}
{{- end }}
{{- if and .Values.web.configSecret (or .Values.web.basicAuth .Values.web.clientAuth) }}true{{ end }}
{{- end }}

{{/*
Whether /secret/NS/NAME is served: "true" or "false" (ui.secretPage: auto,
true, false). true without authentication fails unless acknowledged.
*/}}
{{- define "driftwatch.secretPage" -}}
{{- $auth := include "driftwatch.webAuth" . }}
{{- $v := .Values.ui.secretPage }}
{{- if eq (toString $v) "auto" }}
{{- ternary "true" "false" (eq $auth "true") }}
{{- else if $v }}
{{- if not (or $auth .Values.ui.allowSecretPageWithoutAuth) }}
{{- fail "ui.secretPage=true serves /secret/NS/NAME (the key names, writers and readers of every Secret the agent watches) WITHOUT AUTHENTICATION to whoever reaches the metrics port. Configure web.configSecret with web.basicAuth=true (or web.tls=true and web.clientAuth=true), leave ui.secretPage=auto (on only with authentication), or accept it with ui.allowSecretPageWithoutAuth=true" }}
{{- end }}
{{- print "true" }}
{{- else }}
{{- print "false" }}
{{- end }}
{{- end }}

{{/* The pod template shared by the Deployment and the sharded StatefulSet. */}}
{{- define "driftwatch.podTemplate" -}}
metadata:
  labels:
    {{- include "driftwatch.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "driftwatch.serviceAccountName" . }}
  # The agent reads the API: it needs the token (the ServiceAccount itself does not
  # automount it for other pods).
  automountServiceAccountToken: true
  enableServiceLinks: false
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: driftwatch
      image: {{ include "driftwatch.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - --listen=:9742
        - --log-format={{ .Values.logFormat }}
        - --log-level={{ .Values.logLevel }}
        {{- with include "driftwatch.namespaces" . }}
        - --namespaces={{ . }}
        {{- end }}
        {{- with .Values.excludeNamespaces }}
        - --exclude-namespaces={{ join "," . }}
        {{- end }}
        - --inventory={{ .Values.inventory }}
        - --sync-overdue-factor={{ .Values.syncOverdueFactor }}
        {{- if .Values.evaluateAhead }}
        - --evaluate-ahead
        {{- end }}
        {{- if .Values.noKeyLabel }}
        - --no-key-label
        {{- end }}
        {{- if .Values.sharding.enabled }}
        - --total-shards={{ .Values.sharding.shards }}
        {{- if ne (default "cluster" .Values.sharding.watch) "cluster" }}
        {{- if include "driftwatch.namespaces" . }}
        {{- fail "sharding.watch=namespaces follows the cluster's namespace list: the agent refuses it with namespaces or rbac.namespaced set (it would crash-loop). Use sharding.watch=cluster, or watch every namespace" }}
        {{- end }}
        - --shard-watch={{ .Values.sharding.watch }}
        {{- end }}
        {{- end }}
        {{- if not .Values.ui.enabled }}
        - --ui=false
        {{- else }}
        - --ui.secret-page={{ include "driftwatch.secretPage" . }}
        {{- end }}
        - --health-probe-bind-address=:{{ .Values.health.port }}
        {{- if ne .Values.prometheusRule.runbookBaseURL "https://github.com/driftwatch/driftwatch/blob/main/docs/runbooks/" }}
        - --runbook-base-url={{ .Values.prometheusRule.runbookBaseURL }}
        {{- end }}
        {{- with .Values.flux }}
        {{- if not .artifacts }}
        - --flux-artifacts=false
        {{- end }}
        {{- if ne .namespace "flux-system" }}
        - --flux-namespace={{ .namespace }}
        {{- end }}
        {{- with .sourceHost }}
        - --flux-source-host={{ . }}
        {{- end }}
        {{- with .allowedHosts }}
        - --flux-allowed-hosts={{ join "," . }}
        {{- end }}
        {{- with .allowedCIDRs }}
        - --flux-allowed-cidrs={{ join "," . }}
        {{- end }}
        {{- if ne .pollInterval "30s" }}
        - --flux-poll-interval={{ .pollInterval }}
        {{- end }}
        {{- if ne .timeout "30s" }}
        - --flux-timeout={{ .timeout }}
        {{- end }}
        {{- /* int64: a number from a values file is a float64 (6.7108864e+07) */}}
        {{- if ne (int64 .maxArtifactBytes) 67108864 }}
        - --flux-max-artifact-bytes={{ int64 .maxArtifactBytes }}
        {{- end }}
        {{- if ne .buildTimeout "30s" }}
        - --flux-build-timeout={{ .buildTimeout }}
        {{- end }}
        {{- end }}
        {{- with .Values.argocd.server }}
        - --argocd-server={{ . }}
        {{- end }}
        {{- $_ := include "driftwatch.webAuth" . }}{{/* its checks, whatever ui.* says */}}
        {{- if .Values.web.configSecret }}
        - --web.config.file=/etc/driftwatch/web/{{ .Values.web.configKey }}
        {{- end }}
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      {{- if or .Values.sharding.enabled .Values.extraEnv }}
      env:
        {{- if .Values.sharding.enabled }}
        # --shard from the StatefulSet ordinal (pod-index label, Kubernetes >= 1.28).
        - name: DRIFTWATCH_SHARD
          valueFrom:
            fieldRef:
              fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      ports:
        - name: metrics
          containerPort: 9742
          protocol: TCP
        - name: health
          containerPort: {{ .Values.health.port }}
          protocol: TCP
      # HTTP on the probe port in every mode: no data there, so no TLS and no
      # credentials, whatever web.* sets on the metrics port; readiness waits
      # for the informers to sync.
      readinessProbe:
        httpGet:
          path: /readyz
          port: health
        periodSeconds: 10
        failureThreshold: 3
      livenessProbe:
        httpGet:
          path: /healthz
          port: health
        initialDelaySeconds: 10
        periodSeconds: 20
        failureThreshold: 3
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      {{- if .Values.web.configSecret }}
      volumeMounts:
        - name: web-config
          mountPath: /etc/driftwatch/web
          readOnly: true
      {{- end }}
  {{- if .Values.web.configSecret }}
  volumes:
    - name: web-config
      secret:
        secretName: {{ .Values.web.configSecret }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

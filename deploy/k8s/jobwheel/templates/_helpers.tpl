{{/*
Naming, labels and the shared building blocks of every jobwheel component.

Components are described by "jobwheel.component" dicts:
  key    values key (scheduler, registry, dispatcher, demoExecutor, httpExecutor, console)
  name   resource-name suffix and app.kubernetes.io/component label
  binary executable in the image's /usr/local/bin
  port   name of the serving port: grpc (gRPC services) or http (the console)
  db     true when the component connects to PostgreSQL
  tokens the secret files it reads: {key: <key of the tokens Secret>, file: <file name>},
         the file name giving the flag (file signing-key: JOBWHEEL_SIGNING_KEY_FILE)
  appToken  its own API token, in a Secret of its own (jobwheel.appTokenSecret): {file: <key
         and file name>, value: <values key of the token>, secret: <values key of an existing
         Secret>}; executors: an EXECUTOR token of their app alone, the console: its proxy token
*/}}

{{- define "jobwheel.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every resource name, at most 40 characters so that suffixes like
"-dispatcher-headless" keep Service names within 63. */}}
{{- define "jobwheel.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "jobwheel.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "jobwheel.labels" -}}
helm.sh/chart: {{ include "jobwheel.chart" . }}
app.kubernetes.io/name: {{ include "jobwheel.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jobwheel
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of a component's objects. Argument: dict root, c (component). */}}
{{- define "jobwheel.componentLabels" -}}
{{ include "jobwheel.labels" .root }}
app.kubernetes.io/component: {{ .c.name }}
{{- end -}}

{{/* Selector labels of a component. Argument: dict root, c. */}}
{{- define "jobwheel.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwheel.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .c.name }}
{{- end -}}

{{/* Labels selecting every pod of the release. */}}
{{- define "jobwheel.releaseSelectorLabels" -}}
app.kubernetes.io/name: {{ include "jobwheel.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Component descriptors. Argument: the component key. */}}
{{- define "jobwheel.component" -}}
{{- if eq . "scheduler" -}}
{key: scheduler, name: scheduler, binary: scheduler, port: grpc, db: true, tokens: [{key: scheduler-signing-key, file: signing-key}, {key: admin-token, file: admin-token}]}
{{- else if eq . "registry" -}}
{{- /* The bootstrap executor token (every app) only when auth.executorToken is given: jobwheel.tokenFiles. */ -}}
{key: registry, name: registry, binary: registry, port: grpc, db: true, tokens: [{key: dispatcher-public-key, file: dispatcher-public-key}, {key: admin-token, file: admin-token}]}
{{- else if eq . "dispatcher" -}}
{key: dispatcher, name: dispatcher, binary: dispatcher, port: grpc, db: true, tokens: [{key: dispatcher-signing-key, file: signing-key}, {key: scheduler-public-key, file: scheduler-public-key}]}
{{- else if eq . "demoExecutor" -}}
{{- /* Executors hold public keys and a token scoped to their own app: nothing another component accepts, nothing of another app's. */ -}}
{key: demoExecutor, name: demo-executor, binary: demo_executor, port: grpc, db: false, executor: true, appToken: {file: executor-token, value: token, secret: tokenSecret}, tokens: [{key: dispatcher-public-key, file: dispatcher-public-key}, {key: scheduler-public-key, file: scheduler-public-key}]}
{{- else if eq . "httpExecutor" -}}
{key: httpExecutor, name: http-executor, binary: http_executor, port: grpc, db: false, executor: true, appToken: {file: executor-token, value: token, secret: tokenSecret}, tokens: [{key: dispatcher-public-key, file: dispatcher-public-key}, {key: scheduler-public-key, file: scheduler-public-key}]}
{{- else if eq . "console" -}}
{{- /* The console forwards each caller's own token; its own (a VIEWER of no app, which reads nothing) only names the caller's IP to the backends. */ -}}
{key: console, name: console, binary: console, port: http, db: false, appToken: {file: proxy-token, value: proxyToken, secret: proxyTokenSecret}, tokens: []}
{{- else -}}
{{- fail (printf "jobwheel: unknown component %q" .) -}}
{{- end -}}
{{- end -}}

{{- define "jobwheel.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "jobwheel.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "jobwheel.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Authentication is always on (validate.yaml refuses insecureDev). Prints "true". */}}
{{- define "jobwheel.authEnabled" -}}
true
{{- end -}}

{{/* Name of the Secret the chart creates (when it creates one). */}}
{{- define "jobwheel.secretName" -}}
{{- include "jobwheel.fullname" . -}}
{{- end -}}

{{/* Secret holding the tokens. */}}
{{- define "jobwheel.tokenSecretName" -}}
{{- default (include "jobwheel.secretName" .) .Values.existingSecret -}}
{{- end -}}

{{/* The files of the tokens Secret a component mounts: its descriptor's, and on the registry
and dispatchers the bootstrap executor token (every app) when auth.executorToken is given.
Argument: dict root, c. Prints {tokens: [...]} (YAML). */}}
{{- define "jobwheel.tokenFiles" -}}
{{- $t := .c.tokens -}}
{{- if and (has .c.key (list "registry" "dispatcher")) .root.Values.auth.executorToken -}}
{{- $t = append $t (dict "key" "executor-token" "file" "executor-token") -}}
{{- end -}}
{{- dict "tokens" $t | toYaml -}}
{{- end -}}

{{/* Secret holding a component's own token (appToken): its existing Secret, or the one the
chart makes from its token value (<fullname>-<name>-token); empty when it has neither.
Argument: dict root, c. */}}
{{- define "jobwheel.appTokenSecret" -}}
{{- with .c.appToken -}}
{{- $v := index $.root.Values $.c.key -}}
{{- if index $v .secret -}}
{{- index $v .secret -}}
{{- else if index $v .value -}}
{{- printf "%s-%s-token" (include "jobwheel.fullname" $.root) $.c.name -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where a component's own token is mounted. */}}
{{- define "jobwheel.appTokenDir" -}}/etc/jobwheel/app-token{{- end -}}

{{/* Secret and key holding the DSN. */}}
{{- define "jobwheel.dsnSecretName" -}}
{{- if .Values.db.existingSecret -}}
{{- .Values.db.existingSecret -}}
{{- else -}}
{{- default (include "jobwheel.secretName" .) .Values.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "jobwheel.dsnSecretKey" -}}
{{- if .Values.db.existingSecret -}}{{ .Values.db.existingSecretKey | default "db-dsn" }}{{- else -}}db-dsn{{- end -}}
{{- end -}}

{{/* Data of the chart-managed Secret (base64), empty when the chart creates none. */}}
{{- define "jobwheel.secretData" -}}
{{- if not .Values.existingSecret -}}
{{- if and .Values.db.dsn (not .Values.db.existingSecret) }}
db-dsn: {{ .Values.db.dsn | toString | b64enc | quote }}
{{- end }}
{{- if include "jobwheel.authEnabled" . }}
{{- if .Values.auth.executorToken }}
executor-token: {{ .Values.auth.executorToken | toString | b64enc | quote }}
{{- end }}
admin-token: {{ .Values.auth.adminToken | toString | b64enc | quote }}
scheduler-signing-key: {{ .Values.auth.schedulerSigningKey | toString | b64enc | quote }}
scheduler-public-key: {{ .Values.auth.schedulerPublicKey | toString | b64enc | quote }}
dispatcher-signing-key: {{ .Values.auth.dispatcherSigningKey | toString | b64enc | quote }}
dispatcher-public-key: {{ .Values.auth.dispatcherPublicKey | toString | b64enc | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* gRPC target of a component's headless Service. Argument: dict root, name, port. */}}
{{- define "jobwheel.target" -}}
{{- printf "dns:///%s-%s-headless.%s.svc.%s:%d" (include "jobwheel.fullname" .root) .name .root.Release.Namespace .root.Values.clusterDomain (int .port) -}}
{{- end -}}

{{- define "jobwheel.registryTarget" -}}
{{- include "jobwheel.target" (dict "root" . "name" "registry" "port" .Values.registry.ports.grpc) -}}
{{- end -}}

{{- define "jobwheel.dispatcherTarget" -}}
{{- include "jobwheel.target" (dict "root" . "name" "dispatcher" "port" .Values.dispatcher.ports.grpc) -}}
{{- end -}}

{{/* gRPC target of the scheduler's ClusterIP Service (every replica serves the admin API). */}}
{{- define "jobwheel.schedulerTarget" -}}
{{- printf "%s-scheduler.%s.svc.%s:%d" (include "jobwheel.fullname" .) .Release.Namespace .Values.clusterDomain (int .Values.scheduler.ports.grpc) -}}
{{- end -}}

{{/* Secret with a component's tls.crt, tls.key and ca.crt: the Certificate the chart asks
cert-manager for, the component's entry in tls.componentSecrets, or tls.existingSecret.
Argument: dict root, c. */}}
{{- define "jobwheel.tlsSecretName" -}}
{{- $tls := .root.Values.tls -}}
{{- if $tls.certManager.enabled -}}
{{- printf "%s-%s-tls" (include "jobwheel.fullname" .root) .c.name -}}
{{- else -}}
{{- index ($tls.componentSecrets | default dict) .c.key | default $tls.existingSecret -}}
{{- end -}}
{{- end -}}

{{/* Where secrets and certificates are mounted. */}}
{{- define "jobwheel.secretsDir" -}}/etc/jobwheel/secrets{{- end -}}
{{- define "jobwheel.tlsDir" -}}/etc/jobwheel/tls{{- end -}}

{{/*
Non-secret settings of a component as JOBWHEEL_* environment variables (the ConfigMap data).
Argument: dict root, c. The component's `config` map wins over the chart's own keys.
*/}}
{{- define "jobwheel.configData" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $v := index $root.Values $c.key -}}
{{- $secrets := include "jobwheel.secretsDir" $root -}}
{{- $tlsDir := include "jobwheel.tlsDir" $root -}}
{{- $env := dict -}}
{{- $_ := set $env "JOBWHEEL_LISTEN" (printf "%s:%d" $root.Values.listenHost (int (index $v.ports $c.port))) -}}
{{- $_ := set $env "JOBWHEEL_METRICS_ADDRESS" (printf "%s:%d" $root.Values.listenHost (int $v.ports.metrics)) -}}
{{- $_ := set $env "JOBWHEEL_LOG_JSON" (toString $root.Values.logging.json) -}}
{{- $_ := set $env "JOBWHEEL_LOG_LEVEL" (toString $root.Values.logging.level) -}}
{{- range (include "jobwheel.tokenFiles" . | fromYaml).tokens -}}
{{- $_ := set $env (printf "JOBWHEEL_%s_FILE" (.file | replace "-" "_" | upper)) (printf "%s/%s" $secrets .file) -}}
{{- end -}}
{{- if include "jobwheel.appTokenSecret" . -}}
{{- $_ := set $env (printf "JOBWHEEL_%s_FILE" ($c.appToken.file | replace "-" "_" | upper)) (printf "%s/%s" (include "jobwheel.appTokenDir" $root) $c.appToken.file) -}}
{{- end -}}
{{- if has $c.key (list "dispatcher" "demoExecutor" "httpExecutor" "console") -}}
{{- $_ := set $env "JOBWHEEL_REGISTRY_TARGET" (include "jobwheel.registryTarget" $root) -}}
{{- end -}}
{{- if has $c.key (include "jobwheel.drainingComponents" $root | splitList " ") -}}
{{- $_ := set $env "JOBWHEEL_DRAIN_DELAY" (toString $root.Values.drainDelay) -}}
{{- end -}}
{{- if eq $c.key "console" -}}
{{- $_ := set $env "JOBWHEEL_SCHEDULER_TARGET" (include "jobwheel.schedulerTarget" $root) -}}
{{- $_ := set $env "JOBWHEEL_WEB_ROOT" (toString $v.webRoot) -}}
{{- end -}}
{{- if has $c.key (list "scheduler" "demoExecutor" "httpExecutor") -}}
{{- $_ := set $env "JOBWHEEL_DISPATCHER_TARGET" (include "jobwheel.dispatcherTarget" $root) -}}
{{- end -}}
{{- if $c.executor -}}
{{- $_ := set $env "JOBWHEEL_APP" (toString $v.app) -}}
{{- $_ := set $env "JOBWHEEL_LOG_DIR" "/var/lib/jobwheel/logs" -}}
{{- $_ := set $env "JOBWHEEL_SPOOL_DIR" "/var/lib/jobwheel/spool" -}}
{{- end -}}
{{- if and $root.Values.tls.enabled (eq $c.key "console") -}}
{{- /* The console serves plain HTTP (TLS ends at the Ingress) and is a TLS client of the
scheduler and registry, with a client certificate for mutual TLS. */ -}}
{{- $_ := set $env "JOBWHEEL_TLS_CA" (printf "%s/ca.crt" $tlsDir) -}}
{{- $_ := set $env "JOBWHEEL_TLS_CLIENT_CERT" (printf "%s/tls.crt" $tlsDir) -}}
{{- $_ := set $env "JOBWHEEL_TLS_CLIENT_KEY" (printf "%s/tls.key" $tlsDir) -}}
{{- else if $root.Values.tls.enabled -}}
{{- $_ := set $env "JOBWHEEL_TLS_CERT" (printf "%s/tls.crt" $tlsDir) -}}
{{- $_ := set $env "JOBWHEEL_TLS_KEY" (printf "%s/tls.key" $tlsDir) -}}
{{- if ne $c.key "registry" -}}
{{- /* Clients (the registry calls no one) verify servers with the same CA. */ -}}
{{- $_ := set $env "JOBWHEEL_TLS_CA" (printf "%s/ca.crt" $tlsDir) -}}
{{- end -}}
{{- if $root.Values.tls.clientAuth -}}
{{- $_ := set $env "JOBWHEEL_TLS_CLIENT_CA" (printf "%s/ca.crt" $tlsDir) -}}
{{- end -}}
{{- end -}}
{{- range $k, $val := $v.config -}}
{{- $flag := $k | trimPrefix "--" | replace "-" "_" | upper -}}
{{- $_ := set $env (printf "JOBWHEEL_%s" $flag) (toString $val) -}}
{{- end -}}
{{- range $k := keys $env | sortAlpha }}
{{ $k }}: {{ index $env $k | quote }}
{{- end -}}
{{- end -}}

{{/* gRPC components whose health service follows their readiness (database, registry
snapshot, draining) and answers the "liveness" name SERVING while the process serves. */}}
{{- define "jobwheel.readinessComponents" -}}scheduler registry dispatcher{{- end -}}
{{/* Components that take --drain_delay: those and the console (/readyz 503 while draining). */}}
{{- define "jobwheel.drainingComponents" -}}{{ include "jobwheel.readinessComponents" . }} console{{- end -}}

{{/* Probe with jobwheel's handler: native gRPC health check, or TCP when the port speaks TLS;
HTTP /healthz (liveness, startup) or /readyz (readiness) for the console. Readiness asks the
overall service ""; liveness and startup of the readinessComponents ask "liveness", which stays
SERVING while the database is down or the process drains (no restart for either).
Argument: dict root, c, port, kind (liveness, readiness, startup), probe (timing). */}}
{{- define "jobwheel.probe" -}}
{{- if eq .c.port "http" }}
httpGet:
  path: {{ if eq .kind "readiness" }}/readyz{{ else }}/healthz{{ end }}
  port: http
{{- else if .root.Values.tls.enabled }}
tcpSocket:
  port: grpc
{{- else }}
grpc:
  port: {{ int .port }}
  {{- if and (ne .kind "readiness") (has .c.key (include "jobwheel.readinessComponents" .root | splitList " ")) }}
  service: liveness
  {{- end }}
{{- end }}
{{- with .probe }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod affinity: the component's own, or the default anti-affinity preset. Argument: dict root, c. */}}
{{- define "jobwheel.affinity" -}}
{{- $v := index .root.Values .c.key -}}
{{- if $v.affinity -}}
{{ toYaml $v.affinity }}
{{- else if eq .root.Values.podAntiAffinity "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "jobwheel.selectorLabels" . | nindent 12 }}
{{- else if eq .root.Values.podAntiAffinity "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "jobwheel.selectorLabels" . | nindent 10 }}
{{- end -}}
{{- end -}}

{{/* Topology spread constraints with the component's selector filled in. Argument: dict root, c. */}}
{{- define "jobwheel.topologySpread" -}}
{{- $v := index .root.Values .c.key -}}
{{- $sel := include "jobwheel.selectorLabels" . | fromYaml -}}
{{- $out := list -}}
{{- range $v.topologySpreadConstraints -}}
{{- $tsc := deepCopy . -}}
{{- if not (hasKey $tsc "labelSelector") -}}
{{- $_ := set $tsc "labelSelector" (dict "matchLabels" $sel) -}}
{{- end -}}
{{- $out = append $out $tsc -}}
{{- end -}}
{{- if $out -}}
{{ toYaml $out }}
{{- end -}}
{{- end -}}

{{/*
A component's Deployment. Argument: the component key. Called with the root context as
(dict "root" $ "key" "scheduler").
*/}}
{{- define "jobwheel.deployment" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
{{- $v := index $root.Values $c.key -}}
{{- $tokens := (include "jobwheel.tokenFiles" $ctx | fromYaml).tokens -}}
{{- $auth := and (include "jobwheel.authEnabled" $root) $tokens -}}
{{- $appToken := include "jobwheel.appTokenSecret" $ctx -}}
{{- $secretData := include "jobwheel.secretData" $root -}}
{{- $autoscaling := and (hasKey $v "autoscaling") $v.autoscaling.enabled -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
spec:
  {{- if not $autoscaling }}
  replicas: {{ int $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  {{- with $v.updateStrategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "jobwheel.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "jobwheel.selectorLabels" $ctx | nindent 8 }}
        app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
        app.kubernetes.io/part-of: jobwheel
        {{- with $root.Values.commonLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- if $c.executor }}
        {{- /* Executors are recognized by this label in the NetworkPolicies. */}}
        jobwheel.io/executor: "true"
        {{- end }}
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "jobwheel.configData" $ctx | sha256sum }}
        {{- with $c.appToken }}{{ with index $v .value }}
        checksum/app-token: {{ printf "app-token:%s" (toString .) | sha256sum }}
        {{- end }}{{ end }}
        {{- if and $secretData (or $c.db $auth) }}
        checksum/secret: {{ $secretData | sha256sum }}
        {{- end }}
        {{- if $root.Values.metrics.scrapeAnnotations }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $v.ports.metrics | int | toString | quote }}
        prometheus.io/path: /metrics
        {{- end }}
        {{- with $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "jobwheel.serviceAccountName" $root }}
      automountServiceAccountToken: {{ $root.Values.serviceAccount.automountServiceAccountToken }}
      # Service links would inject <SERVICE>_PORT-style variables; for a release named
      # "jobwheel" they would start with JOBWHEEL_ and be read as flags.
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($v.priorityClassName | default $root.Values.priorityClassName) }}
      priorityClassName: {{ . }}
      {{- end }}
      terminationGracePeriodSeconds: {{ int $v.terminationGracePeriodSeconds }}
      {{- with ($v.nodeSelector | default $root.Values.nodeSelector) }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($v.tolerations | default $root.Values.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with include "jobwheel.affinity" $ctx }}
      affinity:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with include "jobwheel.topologySpread" $ctx }}
      topologySpreadConstraints:
        {{- . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ $c.name }}
          image: {{ include "jobwheel.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command:
            - /usr/local/bin/{{ $c.binary }}
          {{- with $v.extraArgs }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            - name: {{ $c.port }}
              containerPort: {{ int (index $v.ports $c.port) }}
              protocol: TCP
            - name: metrics
              containerPort: {{ int $v.ports.metrics }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
          {{- if or $c.db $c.executor $v.extraEnv }}
          env:
            {{- if $c.db }}
            - name: JOBWHEEL_REPLICA_ID
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: JOBWHEEL_DB_DSN
              valueFrom:
                secretKeyRef:
                  name: {{ include "jobwheel.dsnSecretName" $root }}
                  key: {{ include "jobwheel.dsnSecretKey" $root }}
            {{- else if $c.executor }}
            - name: POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            - name: JOBWHEEL_ADVERTISE_ADDRESS
              value: "$(POD_IP):{{ int $v.ports.grpc }}"
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
          startupProbe:
            {{- include "jobwheel.probe" (dict "root" $root "c" $c "port" (index $v.ports $c.port) "kind" "startup" "probe" $v.startupProbe) | trim | nindent 12 }}
          livenessProbe:
            {{- include "jobwheel.probe" (dict "root" $root "c" $c "port" (index $v.ports $c.port) "kind" "liveness" "probe" $v.livenessProbe) | trim | nindent 12 }}
          readinessProbe:
            {{- include "jobwheel.probe" (dict "root" $root "c" $c "port" (index $v.ports $c.port) "kind" "readiness" "probe" $v.readinessProbe) | trim | nindent 12 }}
          {{- with $v.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $root.Values.containerSecurityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $auth }}
            - name: secrets
              mountPath: {{ include "jobwheel.secretsDir" $root }}
              readOnly: true
            {{- end }}
            {{- if $appToken }}
            - name: app-token
              mountPath: {{ include "jobwheel.appTokenDir" $root }}
              readOnly: true
            {{- end }}
            {{- if $root.Values.tls.enabled }}
            - name: tls
              mountPath: {{ include "jobwheel.tlsDir" $root }}
              readOnly: true
            {{- end }}
            {{- if $c.executor }}
            - name: data
              mountPath: /var/lib/jobwheel
            {{- end }}
            {{- with $root.Values.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: {{ $root.Values.tmpSizeLimit }}
        {{- if $auth }}
        - name: secrets
          secret:
            secretName: {{ include "jobwheel.tokenSecretName" $root }}
            defaultMode: 288 # 0440: readable by the pod's fsGroup only
            items:
              {{- range $tokens }}
              - key: {{ .key }}
                path: {{ .file }}
              {{- end }}
        {{- end }}
        {{- if $appToken }}
        - name: app-token
          secret:
            secretName: {{ $appToken }}
            defaultMode: 288 # 0440
            items:
              - key: {{ $c.appToken.file }}
                path: {{ $c.appToken.file }}
        {{- end }}
        {{- if $root.Values.tls.enabled }}
        - name: tls
          secret:
            secretName: {{ include "jobwheel.tlsSecretName" $ctx }}
            defaultMode: 288 # 0440
            items:
              - key: tls.crt
                path: tls.crt
              - key: tls.key
                path: tls.key
              - key: ca.crt
                path: ca.crt
        {{- end }}
        {{- if $c.executor }}
        - name: data
          emptyDir:
            sizeLimit: {{ $v.dataSizeLimit }}
        {{- end }}
        {{- with $root.Values.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end -}}

{{/* A component's ConfigMap. Argument: dict root, key. */}}
{{- define "jobwheel.configMap" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
data:
  {{- include "jobwheel.configData" $ctx | trim | nindent 2 }}
{{- end -}}

{{/* A component's ClusterIP Service (gRPC + metrics). Argument: dict root, key. */}}
{{- define "jobwheel.service" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
{{- $v := index $root.Values $c.key -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
    jobwheel.io/service: main
  {{- with $v.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $v.service.type }}
  selector:
    {{- include "jobwheel.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: {{ $c.port }}
      port: {{ int (index $v.ports $c.port) }}
      targetPort: {{ $c.port }}
      protocol: TCP
      appProtocol: {{ $c.port }}
    - name: metrics
      port: {{ int $v.ports.metrics }}
      targetPort: metrics
      protocol: TCP
      appProtocol: http
{{- end -}}

{{/* A component's headless Service: one DNS A record per ready pod, for gRPC client-side
round-robin (dns:///...). Argument: dict root, key. */}}
{{- define "jobwheel.headlessService" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
{{- $v := index $root.Values $c.key -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}-headless
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
    jobwheel.io/service: headless
spec:
  type: ClusterIP
  clusterIP: None
  # Only ready pods are published, so clients never dial a replica that is starting or stopping.
  publishNotReadyAddresses: false
  selector:
    {{- include "jobwheel.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: grpc
      port: {{ int $v.ports.grpc }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
{{- end -}}

{{/* A component's PodDisruptionBudget. Argument: dict root, key. */}}
{{- define "jobwheel.pdb" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
{{- $v := index $root.Values $c.key -}}
{{- if $v.pdb.enabled -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
spec:
  {{- if and (not (kindIs "invalid" $v.pdb.minAvailable)) (ne (toString $v.pdb.minAvailable) "") }}
  minAvailable: {{ include "jobwheel.intOrString" $v.pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ include "jobwheel.intOrString" $v.pdb.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "jobwheel.selectorLabels" $ctx | nindent 6 }}
{{- end -}}
{{- end -}}

{{/* An int-or-percentage value: numbers print as integers, "50%" as a quoted string. */}}
{{- define "jobwheel.intOrString" -}}
{{- if kindIs "string" . -}}
{{- if regexMatch "^[0-9]+$" . -}}{{ . }}{{- else -}}{{ . | quote }}{{- end -}}
{{- else -}}
{{- int . -}}
{{- end -}}
{{- end -}}

{{/* A component's HorizontalPodAutoscaler. Argument: dict root, key. */}}
{{- define "jobwheel.hpa" -}}
{{- $root := .root -}}
{{- $c := include "jobwheel.component" .key | fromYaml -}}
{{- $ctx := dict "root" $root "c" $c -}}
{{- $v := index $root.Values $c.key -}}
{{- $a := $v.autoscaling -}}
{{- if $a.enabled -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "jobwheel.componentLabels" $ctx | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "jobwheel.fullname" $root }}-{{ $c.name }}
  minReplicas: {{ int $a.minReplicas }}
  maxReplicas: {{ int $a.maxReplicas }}
  metrics:
    {{- if $a.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ int $a.targetCPUUtilizationPercentage }}
    {{- end }}
    {{- if $a.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ int $a.targetMemoryUtilizationPercentage }}
    {{- end }}
  {{- with $a.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}

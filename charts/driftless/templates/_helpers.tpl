{{/* The name of every object (ClusterRoles are cluster-wide, so it carries the release). */}}
{{- define "driftless.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default "driftless" .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "driftless.selectorLabels" -}}
app.kubernetes.io/name: {{ default "driftless" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "driftless.labels" -}}
{{ include "driftless.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The watched namespaces when not watching globally: the list, else the release namespace (as Reloader). */}}
{{- define "driftless.namespaces" -}}
{{- if .Values.namespaces -}}
{{- .Values.namespaces | uniq | sortAlpha | join "," -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The controller's rules: the verb table of manifests/controller/README.md (without Argo CD's rows with argocdHub: they are read in the hub). */}}
{{- define "driftless.rules" -}}
- apiGroups: [""]
  resources: [configmaps, secrets, pods]
  verbs: [list, watch]
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [apps]
  resources: [replicasets]
  verbs: [list, watch]
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets]
  verbs: [list, watch, patch]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list, watch, patch]
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [list, watch, patch]
- apiGroups: [apps.openshift.io]
  resources: [deploymentconfigs]
  verbs: [list, watch, patch]
- apiGroups: [secrets-store.csi.x-k8s.io]
  resources: [secretproviderclasspodstatuses]
  verbs: [list, watch]
{{- if not .Values.argocdHub.enabled }}
- apiGroups: [argoproj.io]
  resources: [applications]
  verbs: [list, watch]
- apiGroups: [argoproj.io]
  resources: [appprojects]
  verbs: [list, watch]
{{- end }}
{{- end -}}

{{/* Fails the render on combinations the schema cannot express. */}}
{{- define "driftless.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.enableHA) -}}
{{- fail "replicaCount > 1 needs enableHA: true (without leader election every replica would restart workloads)" -}}
{{- end -}}
{{- if and .Values.watchGlobally .Values.namespaces -}}
{{- fail "namespaces is only used with watchGlobally: false" -}}
{{- end -}}
{{- if and .Values.hashKey.enabled .Values.hashKey.create (not .Values.hashKey.value) -}}
{{- fail "hashKey.create needs hashKey.value (the chart never generates a key: see values.yaml)" -}}
{{- end -}}
{{- if and .Values.argocdClusters .Values.argocdHub.enabled -}}
{{- fail "argocdClusters and argocdHub.enabled exclude each other: hub mode runs in Argo CD's cluster, the spoke option in another" -}}
{{- end -}}
{{- if and .Values.argocdHub.enabled (not (or .Values.argocdHub.destinationServer .Values.argocdHub.destinationName)) -}}
{{- fail "argocdHub.enabled needs argocdHub.destinationServer or argocdHub.destinationName: this cluster as the hub's Argo CD names it" -}}
{{- end -}}
{{- if and .Values.argocdPlugin.enabled .Values.argocdPlugin.hashKey.create (not .Values.argocdPlugin.hashKey.value) -}}
{{- fail "argocdPlugin.hashKey.create needs argocdPlugin.hashKey.value" -}}
{{- end -}}
{{- end -}}

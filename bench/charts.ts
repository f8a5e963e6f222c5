/**
 * Synthetic Helm charts for `npm run bench`, generated here in the shape of
 * the public charts the spec measured (no third-party chart is copied):
 *
 * - `crds`: an operator chart whose `crds/` hold ~12 MB of CustomResourceDefinitions
 *   as controller-gen writes them (go-yaml's 80-column folding, indentless
 *   sequences), with thousands of multi-line plain and single-quoted
 *   descriptions, plus the operator's own workloads (kube-prometheus-stack-like);
 * - `app`: ~20 workloads with their ConfigMaps, Secrets, Services, RBAC and a few
 *   CRDs, templated through helpers (argo-cd-like);
 * - `tiny`: one ConfigMap and one Deployment, for the fixed overhead.
 *
 * Deterministic: a seeded generator, so every run measures the same bytes.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
// The property tests' seeded generator: the same bytes on every run.
import { prng } from '../test/plugin/gen.ts';

const WORDS = (
  'the of a to is and in that for be it as this are with or by on not an if field when which value ' +
  'resource object pod container selector label annotation spec status default must may should defines specifies ' +
  'configuration endpoint namespace secret config map volume service monitor rule alert scrape interval timeout ' +
  'target relabel metric prometheus instance replica shard retention storage template cluster node affinity toleration ' +
  'duration string integer boolean list set key name reference kubernetes api version deprecated optional required'
).split(' ');

class Words {
  readonly #random: () => number;
  constructor(seed: number) {
    this.#random = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.#random() * n);
  }
  word(): string {
    return WORDS[this.int(WORDS.length)] as string;
  }
  sentence(words: number): string {
    const out: string[] = [];
    for (let i = 0; i < words; i++) out.push(this.word());
    const text = out.join(' ');
    return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
  }
}

/** Folds `text` at 80 columns as go-yaml's emitter does: the first line after `key: `, the rest at `indent`. */
function fold(prefix: string, text: string, indent: string): string {
  const lines: string[] = [];
  let line = prefix;
  let first = true;
  for (const word of text.split(' ')) {
    if (line.length + word.length + 1 > 80 && !first) {
      lines.push(line);
      line = `${indent}${word}`;
    } else {
      line += first ? word : ` ${word}`;
    }
    first = false;
  }
  lines.push(line);
  return `${lines.join('\n')}\n`;
}

/** A description as controller-gen writes it: plain when it can be, single-quoted when it holds `: `, on one or more lines. */
function description(w: Words, pad: string): string {
  const kind = w.int(10);
  const text = Array.from({ length: 1 + w.int(3) }, () => w.sentence(6 + w.int(22))).join(' ');
  if (kind < 2) return `${pad}description: ${w.sentence(3 + w.int(4))}\n`;
  if (kind < 4) return fold(`${pad}description: '`, `${text} More info: https://example.com/docs/${w.word()}#${w.word()}'`, `${pad}  `);
  return fold(`${pad}description: `, text, `${pad}  `);
}

/** A schema property tree under `properties:` at `pad`, until `budget.bytes` runs out. */
function properties(w: Words, pad: string, depth: number, budget: { bytes: number }): string {
  let out = '';
  const count = depth === 0 ? 6 : 2 + w.int(6);
  for (let i = 0; i < count && budget.bytes > 0; i++) {
    let item = `${pad}${w.word()}${w.word().replace(/^./, (c) => c.toUpperCase())}${i}:\n`;
    item += description(w, `${pad}  `);
    const shape = depth >= 6 ? 0 : w.int(5);
    if (shape === 0 || shape === 1) {
      const type = ['string', 'integer', 'boolean', 'string'][w.int(4)] as string;
      if (type === 'integer') item += `${pad}  format: int32\n`;
      if (type === 'string' && w.int(4) === 0) item += `${pad}  enum:\n${pad}  - ${w.word()}\n${pad}  - ${w.word()}\n`;
      if (type === 'string' && w.int(6) === 0) item += `${pad}  pattern: ^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?)$\n`;
      item += `${pad}  type: ${type}\n`;
    } else if (shape === 2) {
      item += `${pad}  items:\n${description(w, `${pad}    `)}${pad}    properties:\n`;
      item += properties(w, `${pad}      `, depth + 1, budget);
      item += `${pad}    type: object\n${pad}  type: array\n`;
      if (w.int(3) === 0) item += `${pad}  x-kubernetes-list-type: atomic\n`;
    } else {
      item += `${pad}  properties:\n${properties(w, `${pad}    `, depth + 1, budget)}`;
      if (w.int(3) === 0) item += `${pad}  required:\n${pad}  - ${w.word()}\n`;
      item += `${pad}  type: object\n`;
      if (w.int(5) === 0) item += `${pad}  x-kubernetes-map-type: atomic\n`;
    }
    budget.bytes -= item.length;
    out += item;
  }
  return out;
}

/** One CustomResourceDefinition of about `bytes` bytes, as controller-gen prints it. */
function crd(seed: number, kind: string, group: string, bytes: number): string {
  const w = new Words(seed);
  const plural = `${kind.toLowerCase()}s`;
  const versions = ['v1', 'v1beta1'].slice(0, 1 + (seed % 2));
  let out = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.16.1
    operator.example.com/version: 0.80.0
  name: ${plural}.${group}
spec:
  group: ${group}
  names:
    categories:
    - example-operator
    kind: ${kind}
    listKind: ${kind}List
    plural: ${plural}
    shortNames:
    - ${kind.slice(0, 3).toLowerCase()}
    singular: ${kind.toLowerCase()}
  scope: Namespaced
  versions:
`;
  for (const [v, version] of versions.entries()) {
    const budget = { bytes: bytes / versions.length };
    out += `  - additionalPrinterColumns:
    - description: The version of ${kind}
      jsonPath: .spec.version
      name: Version
      type: string
    - jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: ${version}
    schema:
      openAPIV3Schema:
${fold('        description: ', `${kind} defines a ${w.sentence(20)}`, '          ')}        properties:
          apiVersion:
            description: 'APIVersion defines the versioned schema of this representation
              of an object. Servers should convert recognized schemas to the latest
              internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources'
            type: string
          kind:
            description: 'Kind is a string value representing the REST resource this
              object represents. Servers may infer this from the endpoint the client
              submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds'
            type: string
          metadata:
            type: object
          spec:
${description(w, '            ')}            properties:
${properties(w, '              ', 0, budget)}            type: object
        required:
        - spec
        type: object
    served: true
    storage: ${v === 0}
    subresources:
      status: {}
`;
  }
  return out;
}

const HELPERS = `{{- define "bench.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ .root.Chart.Name }}-{{ .root.Chart.Version | replace "+" "_" }}
{{- end -}}
`;

/** A component's templates: ConfigMap, Secret, ServiceAccount, Role, RoleBinding, Service and its workload. */
function componentTemplate(kind: 'Deployment' | 'StatefulSet'): string {
  return `{{- range $name, $c := .Values.components }}
{{- if eq $c.kind "${kind}" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}-config
  labels:
    {{- include "bench.labels" (dict "name" $name "root" $) | nindent 4 }}
data:
  LOG_LEVEL: {{ $c.logLevel | default "info" | quote }}
  config.yaml: |
    server:
      port: {{ $c.port }}
      name: {{ $name }}
    {{- range $i, $u := $c.upstreams }}
    upstream{{ $i }}: {{ $u }}
    {{- end }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}-secret
  labels:
    {{- include "bench.labels" (dict "name" $name "root" $) | nindent 4 }}
type: Opaque
data:
  token: {{ printf "%s-token" $name | b64enc }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  labels:
    {{- include "bench.labels" (dict "name" $name "root" $) | nindent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
rules:
- apiGroups: [""]
  resources: ["configmaps", "secrets", "pods", "services"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets"]
  verbs: ["get", "list", "watch", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
- kind: ServiceAccount
  name: {{ $name }}
  namespace: {{ $.Release.Namespace }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "bench.labels" (dict "name" $name "root" $) | nindent 4 }}
spec:
  ports:
  - name: http
    port: {{ $c.port }}
    targetPort: http
  selector:
    app.kubernetes.io/name: {{ $name }}
---
apiVersion: apps/v1
kind: ${kind}
metadata:
  name: {{ $name }}
  labels:
    {{- include "bench.labels" (dict "name" $name "root" $) | nindent 4 }}
spec:
  replicas: {{ $c.replicas | default 1 }}
  {{- if eq $c.kind "StatefulSet" }}
  serviceName: {{ $name }}
  {{- end }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ $name }}
  template:
    metadata:
      labels:
        {{- include "bench.labels" (dict "name" $name "root" $) | nindent 8 }}
    spec:
      serviceAccountName: {{ $name }}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector:
                matchLabels:
                  app.kubernetes.io/name: {{ $name }}
      containers:
      - name: {{ $name }}
        image: "{{ $.Values.image.repository }}:{{ $.Values.image.tag }}"
        imagePullPolicy: IfNotPresent
        args:
        - --port={{ $c.port }}
        - --config=/etc/{{ $name }}/config.yaml
        ports:
        - name: http
          containerPort: {{ $c.port }}
          protocol: TCP
        env:
        - name: TOKEN
          valueFrom:
            secretKeyRef:
              name: {{ $name }}-secret
              key: token
        envFrom:
        - configMapRef:
            name: {{ $name }}-config
        readinessProbe:
          httpGet:
            path: /healthz
            port: http
          initialDelaySeconds: 5
          periodSeconds: 10
        resources:
          {{- toYaml $c.resources | nindent 10 }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          runAsNonRoot: true
          capabilities:
            drop:
            - ALL
        volumeMounts:
        - name: config
          mountPath: /etc/{{ $name }}
      volumes:
      - name: config
        configMap:
          name: {{ $name }}-config
{{- end }}
{{- end }}
`;
}

function valuesFile(components: number): string {
  let out = 'image:\n  repository: ghcr.io/example/app\n  tag: v1.2.3\ncomponents:\n';
  for (let i = 0; i < components; i++) {
    out += `  component-${String(i).padStart(2, '0')}:
    kind: ${i % 4 === 3 ? 'StatefulSet' : 'Deployment'}
    port: ${8080 + i}
    replicas: ${1 + (i % 3)}
    upstreams: [http://a-${i}.svc:80, http://b-${i}.svc:80]
    resources:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {memory: 512Mi}
`;
  }
  return out;
}

async function writeChart(dir: string, name: string, files: Readonly<Record<string, string>>): Promise<void> {
  await mkdir(join(dir, 'templates'), { recursive: true });
  await writeFile(join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 1.0.0\nappVersion: "1.0.0"\n`);
  for (const [file, text] of Object.entries(files)) {
    await mkdir(join(dir, file, '..'), { recursive: true });
    await writeFile(join(dir, file), text);
  }
}

const CRD_KINDS = ['Alertmanager', 'AlertmanagerConfig', 'PodMonitor', 'Probe', 'Prometheus', 'PrometheusAgent', 'PrometheusRule', 'ScrapeConfig', 'ServiceMonitor', 'ThanosRuler'];

/** The kube-prometheus-stack-like chart: ~12 MB of CRDs, and the operator's workloads. */
export async function writeCrdChart(dir: string): Promise<void> {
  const files: Record<string, string> = { 'templates/_helpers.tpl': HELPERS, 'templates/deployments.yaml': componentTemplate('Deployment'),
    'templates/statefulsets.yaml': componentTemplate('StatefulSet'), 'values.yaml': valuesFile(6) };
  // Sizes like the real ones: a few huge (Prometheus, Alertmanager, ThanosRuler), the rest smaller.
  const sizes = [1_600_000, 500_000, 700_000, 500_000, 2_400_000, 2_000_000, 150_000, 800_000, 700_000, 1_800_000];
  CRD_KINDS.forEach((kind, i) => {
    // The budget counts nested text at every level, so the CRD comes out at about a quarter of it.
    files[`crds/crd-${kind.toLowerCase()}.yaml`] = crd(100 + i, kind, 'monitoring.example.com', 6 * (sizes[i] ?? 500_000));
  });
  await writeChart(dir, 'crd-heavy', files);
}

/** The argo-cd-like chart: 20 workloads with ConfigMaps, Secrets, Services, RBAC, and three CRDs. */
export async function writeAppChart(dir: string): Promise<void> {
  await writeChart(dir, 'mid-app', {
    'templates/_helpers.tpl': HELPERS,
    'templates/deployments.yaml': componentTemplate('Deployment'),
    'templates/statefulsets.yaml': componentTemplate('StatefulSet'),
    'values.yaml': valuesFile(20),
    'crds/applications.yaml': crd(7, 'Application', 'apps.example.com', 1_200_000),
    'crds/projects.yaml': crd(8, 'Project', 'apps.example.com', 250_000),
    'crds/applicationsets.yaml': crd(9, 'ApplicationSet', 'apps.example.com', 2_800_000),
  });
}

/** The smallest real chart: one ConfigMap and one Deployment using it. */
export async function writeTinyChart(dir: string): Promise<void> {
  await writeChart(dir, 'tiny', {
    'templates/_helpers.tpl': HELPERS,
    'templates/deployments.yaml': componentTemplate('Deployment'),
    'values.yaml': valuesFile(1),
  });
}

/**
 * The Stage configuration that makes kwok behave like a kubelet for the test
 * cluster's fake nodes. kwok itself knows nothing about pods: each Stage says
 * "when an object matches this selector, after this delay, write this status
 * (or delete it)". Written here rather than taken from kwok's presets so that
 * the delays are configurable and readiness can be switched off per pod.
 */
import { stringify } from 'yaml';

/** Pod annotation: `"false"` keeps the pod Running but not Ready (health gating tests). */
export const readinessAnnotation = 'driftless.dev/test-ready';

/**
 * Pod annotation: a Go duration (`"4s"`) that replaces `podReadyDelayMs` for this pod, so the
 * workloads of a fault test come up slowly (a restart lasts long enough for a fault to land
 * in the middle of it) while the rest of the cluster stays fast.
 */
export const readyDelayAnnotation = 'driftless.dev/test-ready-delay';

/** Node annotation that kwok's `--manage-nodes-with-annotation-selector` selects on. */
export const fakeNodeAnnotation = 'kwok.x-k8s.io/node';

/** Timing of the fake kubelet. */
export interface FakeKubeletTiming {
  /** From binding to Running (and Ready unless the pod opts out). */
  readonly podReadyDelayMs: number;
  /** From Running to Succeeded, for pods owned by a Job. */
  readonly jobCompleteDelayMs: number;
}

const annotationQuery = `.metadata.annotations["${readinessAnnotation}"]`;
const readyConditionQuery = '.status.conditions.[] | select( .type == "Ready" ) | .status';
const notDeleted = { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' };
const phaseIs = (phase: string) => ({ key: '.status.phase', operator: 'In', values: [phase] });
const wantsReady = { key: annotationQuery, operator: 'NotIn', values: ['false'] };
const wantsUnready = { key: annotationQuery, operator: 'In', values: ['false'] };

/**
 * A Go template (kwok's template language) for a running pod's status. All
 * conditions are written every time, so the patch is the same whether kwok
 * merges lists or replaces them.
 */
function runningPodStatus(ready: boolean): string {
  const flag = ready ? 'true' : 'false';
  const condition = ready ? '"True"' : '"False"';
  return `{{ $now := Now }}
conditions:
- { type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: PodReadyToStartContainers, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: ContainersReady, status: ${condition}, lastTransitionTime: {{ $now | Quote }} }
- { type: Ready, status: ${condition}, lastTransitionTime: {{ $now | Quote }} }
{{ range .spec.readinessGates }}
- { type: {{ .conditionType | Quote }}, status: "True", lastTransitionTime: {{ $now | Quote }} }
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: ${flag}
  started: true
  restartCount: 0
  state: { running: { startedAt: {{ $now | Quote }} } }
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: true
  restartCount: 0
  state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } }
{{ end }}
{{ with NodeIPWith .spec.nodeName }}
hostIP: {{ . | Quote }}
hostIPs: [ { ip: {{ . | Quote }} } ]
{{ end }}
{{ with PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
podIP: {{ . | Quote }}
podIPs: [ { ip: {{ . | Quote }} } ]
{{ end }}
phase: Running
startTime: {{ or .status.startTime $now | Quote }}
`;
}

const succeededPodStatus = `{{ $now := Now }}
conditions:
- { type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }} }
- { type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }} }
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } }
{{ end }}
phase: Succeeded
`;

const readyNodeStatus = `{{ $now := Now }}
conditions:
- { type: Ready, status: "True", reason: KubeletReady, message: "kwok fake kubelet", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }} }
- { type: MemoryPressure, status: "False", reason: KubeletHasSufficientMemory, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }} }
- { type: DiskPressure, status: "False", reason: KubeletHasNoDiskPressure, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }} }
- { type: PIDPressure, status: "False", reason: KubeletHasSufficientPID, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }} }
addresses:
- { type: InternalIP, address: {{ NodeIP | Quote }} }
- { type: Hostname, address: {{ .metadata.name | Quote }} }
allocatable: { cpu: "32", memory: 256Gi, pods: "110" }
capacity: { cpu: "32", memory: 256Gi, pods: "110" }
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: fake
  kubeProxyVersion: fake
  containerRuntimeVersion: fake
  kernelVersion: fake
  osImage: fake
  machineID: ""
  systemUUID: ""
  bootID: ""
`;

function stage(name: string, kind: 'Pod' | 'Node', spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    kind: 'Stage',
    metadata: { name },
    spec: { resourceRef: { apiGroup: 'v1', kind }, ...spec },
  };
}

/** Renders kwok's `--config` file: one YAML document per Stage. */
export function renderKwokStages(timing: FakeKubeletTiming): string {
  // kwok reads a duration string from the expression; `//` (jq's alternative) gives the
  // cluster's default when the pod has no such annotation.
  const readyDelay = {
    durationMilliseconds: timing.podReadyDelayMs,
    durationFrom: { expressionFrom: `.metadata.annotations["${readyDelayAnnotation}"] // "${timing.podReadyDelayMs}ms"` },
  };
  const stages = [
    stage('node-ready', 'Node', {
      selector: { matchExpressions: [{ key: readyConditionQuery, operator: 'NotIn', values: ['True'] }] },
      next: { statusTemplate: readyNodeStatus },
    }),
    stage('pod-ready', 'Pod', {
      selector: { matchExpressions: [notDeleted, phaseIs('Pending'), wantsReady] },
      delay: readyDelay,
      next: { statusTemplate: runningPodStatus(true) },
    }),
    stage('pod-running-unready', 'Pod', {
      selector: { matchExpressions: [notDeleted, phaseIs('Pending'), wantsUnready] },
      delay: readyDelay,
      next: { statusTemplate: runningPodStatus(false) },
    }),
    // Readiness follows the annotation on live pods too, so a test can break a running pod.
    stage('pod-readiness-lost', 'Pod', {
      selector: {
        matchExpressions: [notDeleted, phaseIs('Running'), wantsUnready, { key: readyConditionQuery, operator: 'In', values: ['True'] }],
      },
      next: { statusTemplate: runningPodStatus(false) },
    }),
    stage('pod-readiness-regained', 'Pod', {
      selector: {
        matchExpressions: [
          notDeleted,
          phaseIs('Running'),
          wantsReady,
          { key: readyConditionQuery, operator: 'NotIn', values: ['True'] },
          { key: '.metadata.ownerReferences.[].kind', operator: 'NotIn', values: ['Job'] },
        ],
      },
      next: { statusTemplate: runningPodStatus(true) },
    }),
    stage('pod-complete', 'Pod', {
      selector: {
        matchExpressions: [notDeleted, phaseIs('Running'), { key: '.metadata.ownerReferences.[].kind', operator: 'In', values: ['Job'] }],
      },
      delay: { durationMilliseconds: timing.jobCompleteDelayMs },
      next: { statusTemplate: succeededPodStatus },
    }),
    // deletionTimestamp is "now + grace period": waiting until then honours the grace period,
    // as a kubelet whose containers ignore SIGTERM would. Pods with short grace go fast.
    stage('pod-delete', 'Pod', {
      selector: { matchExpressions: [{ key: '.metadata.deletionTimestamp', operator: 'Exists' }] },
      delay: { durationMilliseconds: 0, durationFrom: { expressionFrom: '.metadata.deletionTimestamp' } },
      next: { delete: true },
    }),
  ];
  return stages.map((document) => stringify(document, { lineWidth: 0 })).join('---\n');
}

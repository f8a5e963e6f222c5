/**
 * The vocabulary shared by the plugin (rendered manifests) and the controller
 * (live objects from the API server). Everything in `core/` is pure: it takes
 * plain parsed objects and returns plain data, so both shells compute the same
 * answer for the same objects.
 */

/** Where an object came from, carried only so that errors can name it. */
export interface Origin {
  /** A file path relative to the app directory, or a label such as `<stdin>` or `<kustomize build>`. */
  readonly file: string;
  /** Zero-based index of the YAML document within that file or stream. */
  readonly document: number;
  /** The template file a renderer names for the document (helm's `# Source:` comment), for messages. */
  readonly template?: string;
}

/** A Kubernetes object as parsed from YAML/JSON or read from the API server. */
export interface KubeObject {
  readonly apiVersion?: unknown;
  readonly kind?: unknown;
  readonly metadata?: unknown;
  readonly [field: string]: unknown;
}

/** An object together with the identity facts every rule needs, extracted once. */
export interface Manifest {
  readonly object: KubeObject;
  /** API group, `""` for the core group (from `apiVersion`). */
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  /** The object's namespace, else the app's destination namespace, else `""`. */
  readonly namespace: string;
  readonly origin?: Origin;
}

/** The kinds of config object a workload can reference. */
export type ConfigKind = 'ConfigMap' | 'Secret' | 'SecretProviderClass';

/** The pod-spec fields a reference can come from. */
export type ReferenceField =
  | 'env.configMapKeyRef'
  | 'env.secretKeyRef'
  | 'envFrom.configMapRef'
  | 'envFrom.secretRef'
  | 'volume.configMap'
  | 'volume.secret'
  | 'volume.projected.configMap'
  | 'volume.projected.secret'
  | 'volume.csi.secretProviderClass';

/** One use of a config object by a pod template. */
export interface Reference {
  readonly kind: ConfigKind;
  readonly name: string;
  readonly field: ReferenceField;
  /**
   * A readable locator within the pod spec, e.g. `containers[app].env[DB_URL]`,
   * `initContainers[migrate].envFrom[0]`, `volumes[config]`.
   */
  readonly path: string;
  /**
   * Containers the reference reaches: the container holding an env/envFrom, or
   * every container mounting the volume (empty for a volume nobody mounts).
   */
  readonly containers: readonly string[];
  /** The reference's `optional` flag (a missing optional object does not block the pod). */
  readonly optional: boolean;
}

/** Which pod templates to process: Reloader's default, or its `--auto-reload-all`. */
export type PolicyMode = 'annotated' | 'all';

/** The policy rule that decided whether a config object feeds a workload's hash. */
export type PolicyRule =
  | 'ignore'
  | 'exclude'
  | 'named'
  | 'search'
  | 'auto'
  | 'typed-auto'
  | 'auto-all'
  | 'not-annotated'
  | 'auto-disabled'
  | 'not-referenced'
  | 'not-matched';

/** The outcome of the policy for one (workload, config object) pair. */
export interface PolicyDecision {
  readonly selected: boolean;
  readonly rule: PolicyRule;
  /** One human sentence, e.g. `matched "app-.*" in secret.reloader.stakater.com/reload`. */
  readonly reason: string;
}

/** One element of the hash v1 message (see docs/hash-v1.md). A Secret entry holds its data: never print or log one. */
export type HashEntry =
  | {
      readonly kind: 'ConfigMap';
      readonly name: string;
      readonly data: Readonly<Record<string, string>>;
      readonly binaryData: Readonly<Record<string, string>>;
    }
  | {
      readonly kind: 'Secret';
      readonly name: string;
      readonly type: string;
      readonly data: Readonly<Record<string, string>>;
    }
  | {
      readonly kind: 'SealedSecret' | 'ExternalSecret' | 'Certificate' | 'SecretProviderClass';
      readonly name: string;
      readonly spec: unknown;
    }
  | {
      /** A digest from the out-of-band file for a config not in the render (docs/hash-v1.md §7). */
      readonly kind: 'OutOfBandConfigMap' | 'OutOfBandSecret';
      readonly name: string;
      readonly digest: string;
    };

/** The hash configuration: an HMAC key, or none for a plain SHA-256. */
export interface HashKey {
  readonly bytes: Uint8Array;
}

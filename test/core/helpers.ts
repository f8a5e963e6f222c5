import { toManifest } from '../../core/index.ts';
import type { Manifest } from '../../core/index.ts';

/** A Manifest in namespace `prod` (unless the object says otherwise), as the plugin would build it. */
export function manifest(object: unknown, origin?: { file: string; document: number }): Manifest {
  return toManifest(object, { defaultNamespace: 'prod', ...(origin === undefined ? {} : { origin }) });
}

/** A Deployment whose pod spec and annotations the test provides. */
export function deployment(
  name: string,
  podSpec: unknown,
  options: { annotations?: Record<string, unknown>; templateAnnotations?: Record<string, unknown>; namespace?: string } = {},
): Manifest {
  return manifest({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...(options.namespace === undefined ? {} : { namespace: options.namespace }), ...(options.annotations === undefined ? {} : { annotations: options.annotations }) },
    spec: {
      template: {
        metadata: options.templateAnnotations === undefined ? { labels: { app: name } } : { annotations: options.templateAnnotations },
        spec: podSpec,
      },
    },
  });
}

/** A pod spec with one container `app` that reads the named ConfigMaps/Secrets through envFrom. */
export function envFromPod(refs: { configMaps?: string[]; secrets?: string[] }): unknown {
  return {
    containers: [{
      name: 'app',
      image: 'app:1',
      envFrom: [
        ...(refs.configMaps ?? []).map((name) => ({ configMapRef: { name } })),
        ...(refs.secrets ?? []).map((name) => ({ secretRef: { name } })),
      ],
    }],
  };
}

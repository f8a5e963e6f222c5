import type { Origin } from './model.ts';

/** Identifies an object in a message without ever including its content. */
export interface ObjectIdentity {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly origin?: Origin;
}

/**
 * `file.yaml#2 Secret prod/db` — enough for a user to find the document; for
 * rendered output also the template file, `<helm template>#80 Secret prod/db from chart/templates/db.yaml`.
 */
export function describeObject(object: ObjectIdentity): string {
  const where = object.origin === undefined ? '' : `${object.origin.file}#${object.origin.document} `;
  const scoped = object.namespace === '' ? object.name : `${object.namespace}/${object.name}`;
  const template = object.origin?.template === undefined ? '' : ` from ${object.origin.template}`;
  return `${where}${object.kind} ${scoped || '<unnamed>'}${template}`;
}

/**
 * An object in the input is not something Driftless can process: a ConfigMap
 * value that is not a string, base64 that does not decode, a bad regex in a
 * reload annotation. The message names the object and the field and never
 * quotes a Secret's value.
 */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
  readonly object: ObjectIdentity;
  /** A dotted path to the offending field, e.g. `data.password` or `metadata.annotations[...]`. */
  readonly field: string;
  readonly problem: string;

  constructor(object: ObjectIdentity, field: string, problem: string, options?: ErrorOptions) {
    super(`${describeObject(object)}: ${field}: ${problem}`, options);
    // Copy the identity only: callers pass a whole Manifest, whose `object` holds the Secret's data,
    // and a logger that serialises the error's own properties must not find it there.
    this.object = Object.freeze({
      kind: object.kind,
      name: object.name,
      namespace: object.namespace,
      ...(object.origin === undefined ? {} : { origin: object.origin }),
    });
    this.field = field;
    this.problem = problem;
  }
}

/**
 * Both programs hand their parsed configuration out deeply frozen, so nothing
 * downstream can change a setting after it was validated.
 */

/** Freezes `value` and every object reachable from it (already frozen ones, and what they hold, are left as they are); returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

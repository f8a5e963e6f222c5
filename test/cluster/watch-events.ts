/**
 * Helpers for tests that read watch streams.
 */
import type { ApiClient, RequestOptions, WatchEvent } from './api.ts';

/**
 * Reads watch events until one satisfies `done`, then closes the stream.
 * @throws {Error} when the stream ends first.
 */
export async function nextEvent(
  events: AsyncGenerator<WatchEvent>,
  abort: AbortController,
  done: (event: WatchEvent) => boolean,
): Promise<WatchEvent> {
  try {
    for await (const event of events) if (done(event)) return event;
    throw new Error('the watch ended before the expected event');
  } finally {
    abort.abort();
  }
}

/** The `data` of a ConfigMap in a watch event. */
export function configMapData(event: WatchEvent): Record<string, string> {
  return (event.object['data'] ?? {}) as Record<string, string>;
}

/** A JSON merge patch, the smallest write the watch tests make. */
export const MERGE_PATCH: RequestOptions = { contentType: 'application/merge-patch+json' };

/** Watches the one ConfigMap `name` under `path` (a namespace's configmaps) from `resourceVersion`. */
export function watchConfigMap(
  client: ApiClient,
  path: string,
  name: string,
  resourceVersion: string,
  abort: AbortController,
): AsyncGenerator<WatchEvent> {
  return client.watch(`${path}?fieldSelector=metadata.name%3D${encodeURIComponent(name)}&resourceVersion=${resourceVersion}`, abort.signal);
}

/**
 * Every annotation key is named once, in core/annotations.ts: a key spelled out again
 * elsewhere is a second place to change (and to get wrong) when it moves. The program
 * code is scanned for a string literal that starts with a key of ours or of Reloader's.
 */
import assert from 'node:assert/strict';
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ANNOTATIONS, BOOKKEEPING, DRIFTLESS_PREFIX, FLEET_ANNOTATIONS, HASH_ANNOTATION, WRITE_BACK_ANNOTATION } from '../../core/index.ts';

const root = join(import.meta.dirname, '..', '..');
const OWNER = 'core/annotations.ts';
/** Quoted `driftless.dev/...` strings that are not annotation keys. */
const NOT_KEYS: Readonly<Record<string, string>> = {
  // A label, owned by the record store.
  "'driftless.dev/record'": 'controller/record/record.ts',
  // A label too: which cluster a hub's record belongs to (ADR 0019).
  "'driftless.dev/record-cluster'": 'controller/record/record.ts',
  // The reporting component of Events.
  "'driftless.dev/controller'": 'controller/events.ts',
  // The schema of a notification's JSON body.
  "'driftless.dev/notification/v1'": 'controller/notify/message.ts',
};
// Quoted with ' or " only: documentation names keys in backticks, and may.
const KEY = /['"](?:driftless\.dev|(?:[a-z]+\.)*reloader\.stakater\.com)\/[^'"]*['"]/g;

it('names every annotation key in core/annotations.ts only', () => {
  const files = globSync('{cli,core,plugin,controller,bin}/**/*.ts', { cwd: root }).sort();
  assert.ok(files.length > 100, `found only ${files.length} files`);
  const elsewhere = files.flatMap((file) => {
    if (file === OWNER) return [];
    const found = readFileSync(join(root, file), 'utf8').match(KEY) ?? [];
    return found.filter((literal) => NOT_KEYS[literal] !== file).map((literal) => `${file}: ${literal}`);
  });
  assert.deepEqual(elsewhere, []);
});

it('keeps every key of ours under the one prefix', () => {
  const keys = [HASH_ANNOTATION, WRITE_BACK_ANNOTATION, ...Object.values(BOOKKEEPING), FLEET_ANNOTATIONS.restartHalted];
  assert.deepEqual(keys.filter((key) => !key.startsWith(DRIFTLESS_PREFIX)), []);
  // Reloader's keys are never ours: the controller tells its own from them by the prefix (cache/reduce.ts).
  const reloader = [ANNOTATIONS.auto, ANNOTATIONS.search, ANNOTATIONS.match, ANNOTATIONS.ignore, FLEET_ANNOTATIONS.pausePeriod];
  assert.deepEqual(reloader.filter((key) => key.startsWith(DRIFTLESS_PREFIX)), []);
});

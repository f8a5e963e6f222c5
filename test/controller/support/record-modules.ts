/**
 * Preloaded with `--import` into a process under test: records the URL of every module it loads and
 * writes them, one a line, to the file named by DRIFTLESS_RECORD_MODULES when the process exits.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env['DRIFTLESS_RECORD_MODULES'];
const loaded: string[] = [];
registerHooks({
  load(url, context, nextLoad) {
    loaded.push(url);
    return nextLoad(url, context);
  },
});
process.on('exit', () => {
  if (file !== undefined) writeFileSync(file, `${loaded.join('\n')}\n`);
});

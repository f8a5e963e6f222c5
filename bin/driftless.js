#!/usr/bin/env node
// The `driftless` executable. Plain JavaScript so that an old Node fails with a
// readable message instead of a syntax error on TypeScript it cannot strip.
const [major] = process.versions.node.split('.').map(Number);
if (major === undefined || major < 24) {
  process.stderr.write(`driftless: Node.js 24 or newer is required (this is ${process.version}); run it through npm scripts or npx, which use the pinned Node 24.\n`);
  process.exit(1);
}
await import('../plugin/main.ts');

#!/usr/bin/env node
// The `driftless` executable. Plain JavaScript so that an old Node fails with a
// readable message instead of a syntax error on TypeScript it cannot strip.
const [major] = process.versions.node.split('.').map(Number);
if (major === undefined || major < 24) {
  process.stderr.write(`driftless: Node.js 24 or newer is required (this is ${process.version}); run it through npm scripts or npx, which use the pinned Node 24.\n`);
  process.exit(1);
}
// Argo CD starts a new process for every render, so start-up is on the path of
// every sync. Node's compile cache (NODE_COMPILE_CACHE, else the OS temp dir;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off) keeps the stripped and compiled
// modules between runs and cuts start-up CPU to about a third.
const { default: module } = await import('node:module');
module.enableCompileCache?.();
// The controller is a separate entry point, so the plugin's cold start never loads its dependencies.
// `explain --live` reads the cluster with the controller's code, so it is routed there too.
// Both load @kubernetes/client-node's KubeConfig, whose generated API barrel is most of the controller's
// idle memory: the resolve hook that leaves it out has to be in place before their modules are resolved.
const command = process.argv[2];
const live = command === 'explain' && process.argv.slice(3).includes('--live');
if (command === 'controller' || live) await import('../controller/kube/slim-client-node.ts');
if (command === 'controller') await import('../controller/main.ts');
else if (live) await import('../controller/explain/main.ts');
else await import('../plugin/main.ts');

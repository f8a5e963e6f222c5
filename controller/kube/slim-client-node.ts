/**
 * Loads `@kubernetes/client-node`'s KubeConfig without its generated API.
 *
 * The controller uses client-node for one thing: reading a kubeconfig (or the
 * in-cluster service account) and authenticating requests (kube/client.ts).
 * `dist/config.js` imports two names from the generated barrel
 * `dist/gen/index.js`, which loads every model and typed API class: ~850 of the
 * ~1,100 modules the controller loaded at start, ~70 MB of its idle RSS
 * (ADR 0021). This resolve hook points that one import, from that one file, to
 * `client-node-gen.ts`, which re-exports the two names from their own modules.
 * Everything else resolves as usual; if a client-node upgrade imports more from
 * the barrel, linking fails at start with a missing export, not later.
 *
 * Import this module before anything that loads client-node (bin/driftless.js
 * does, for `controller` and `explain --live`): ES modules are resolved before
 * any of them runs, so a hook registered inside the graph comes too late.
 */
import { registerHooks } from 'node:module';

const CONFIG_MODULE = '/node_modules/@kubernetes/client-node/dist/config.js';
const SHIM = new URL('./client-node-gen.ts', import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === './gen/index.js' && context.parentURL?.endsWith(CONFIG_MODULE) === true) {
      return { url: SHIM, shortCircuit: true };
    }
    return nextResolve(specifier, context);
  },
});

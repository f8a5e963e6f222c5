/**
 * What `@kubernetes/client-node`'s `dist/config.js` (KubeConfig) takes from its
 * generated API barrel `dist/gen/index.js`: two names, used only by
 * `makeApiClient`, which the controller never calls. The barrel itself loads
 * every generated model and API class (~850 modules, ~70 MB resident), so
 * `slim-client-node.ts` points config.js here instead (ADR 0021).
 */
export { createConfiguration } from '@kubernetes/client-node/dist/gen/configuration.js';
export { ServerConfiguration } from '@kubernetes/client-node/dist/gen/servers.js';

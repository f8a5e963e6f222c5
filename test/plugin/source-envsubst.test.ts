import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { envsubst } from '../../plugin/source/envsubst.ts';

describe('envsubst (Argo CD Env.Envsubst = Go os.Expand over the build environment)', () => {
  it('expands exactly as Go does (expected values printed by Go 1.x os.Expand with the same mapping)', () => {
    const environment = { ARGOCD_APP_NAME: 'shop', HOME: '/root' };
    const go: Record<string, string> = {
      '$$': '$',
      '$$5': '$5',
      '$-x': 'x',
      '$ARGOCD_APP_NAMEx': '',
      '${1}y': 'y',
      '${ARGOCD_APP_NAME': 'ARGOCD_APP_NAME',
      '${ARGOCD_APP_NAME}x': 'shopx',
      '${}': '',
      '$ä': '$ä',
      'a$ b': 'a$ b',
      'a-$ARGOCD_APP_NAME-b': 'a-shop-b',
      'cost $5': 'cost ',
      'end$': 'end$',
      'plain': 'plain',
    };
    for (const [input, expected] of Object.entries(go)) assert.equal(envsubst(input, environment), expected, input);
  });

  it('never reads the sidecar\'s own variables, only Argo CD\'s build environment', () => {
    assert.equal(envsubst('$HOME ${PATH} ${ARGOCD_APP_NAMESPACE}', { HOME: '/root', PATH: '/bin', ARGOCD_APP_NAMESPACE: 'prod' }), '  prod');
  });
});

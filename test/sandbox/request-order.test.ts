import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { call, sandbox } from './helpers.js';

// A request without a valid key gets 401 whatever its body; then 403 for scope; then validation.
const FULL = 'svc_sandbox_order_full';
const NO_WRITE = 'svc_sandbox_order_read';

let sb: Sandbox;
beforeAll(async () => {
  sb = await sandbox({ keys: [FULL, { key: NO_WRITE, scopes: ['correspondence.read'] }] });
});
afterAll(() => sb.close());

const BODIES = {
  'invalid JSON': { rawBody: '{"kind":', headers: { 'content-type': 'application/json' } },
  'a JSON array': { rawBody: '[1,2]', headers: { 'content-type': 'application/json' } },
  'a body that is not JSON': { rawBody: 'kind=letter', headers: { 'content-type': 'text/plain' } },
} as const;

describe.each(Object.entries(BODIES))('POST /correspondence with %s', (_name, body) => {
  it('no key: 401 missing_api_key', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: null, ...body });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('missing_api_key');
  });

  it('an unknown key: 401 invalid_api_key', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: 'svc_sandbox_nobody', ...body });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
  });

  it('a key without correspondence.write: 403 naming it', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: NO_WRITE, ...body });
    expect(res.status).toBe(403);
    expect(res.body.error.required_scope).toBe('correspondence.write');
  });

  it('a key with the scope: the validation error', async () => {
    const res = await call(sb.url, 'POST', '/sender/v2/correspondence', { key: FULL, ...body });
    expect([400, 415]).toContain(res.status);
    expect(['invalid_json', 'invalid_request', 'unsupported_media_type']).toContain(res.body.error.code);
  });
});

describe('the control routes', () => {
  it('answer 401 before looking at the body too', async () => {
    const res = await call(sb.url, 'POST', '/sandbox/trigger', { key: null, ...BODIES['invalid JSON'] });
    expect(res.status).toBe(401);
    const ok = await call(sb.url, 'POST', '/sandbox/trigger', { key: FULL, ...BODIES['invalid JSON'] });
    expect(ok.status).toBe(400);
  });
});

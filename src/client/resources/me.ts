import type { CallOptions, OrganisationCaller } from '../types.js';
import { expectObject, expectString } from '../validate.js';
import type { ResourceContext } from './context.js';

/** GET /me: who the key belongs to and what it may do. Touches no business state, so it is the connectivity check. */
export function meResource(ctx: ResourceContext) {
  return async (options: CallOptions = {}): Promise<OrganisationCaller> => {
    const res = await ctx.transport.send({ operation: 'me', method: 'GET', path: '/me', signal: options.signal });
    const body = expectObject('me', res.status, res.body);
    expectString('me', res.status, body, 'organization_id');
    return body as OrganisationCaller;
  };
}

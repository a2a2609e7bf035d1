import type { IdempotentCallOptions, RotateApiKeyInput, RotatedApiKey } from '../types.js';
import { expectObject, firstString, invalidResponse } from '../validate.js';
import { segment, type ResourceContext } from './context.js';

/** The spec does not name the field carrying the new key; these are tried in order. */
export const ROTATED_KEY_FIELDS = ['secret', 'api_key', 'key'] as const;

export function apiKeysResource(ctx: ResourceContext) {
  return {
    /**
     * POST /api-keys/{key_id}/rotate. Never retried by default: a replayed rotation
     * would mint a second key and the first answer's key would be lost.
     */
    async rotate(keyId: string, input: RotateApiKeyInput, options: IdempotentCallOptions = {}): Promise<RotatedApiKey> {
      const res = await ctx.transport.send({
        operation: 'apiKeys.rotate',
        method: 'POST',
        path: `/api-keys/${segment('keyId', keyId)}/rotate`,
        body: input,
        idempotencyKey: options.idempotencyKey,
        signal: options.signal,
      });
      const body = expectObject('apiKeys.rotate', res.status, res.body);
      const secret = firstString(body, ROTATED_KEY_FIELDS);
      if (secret === undefined)
        throw invalidResponse(
          'apiKeys.rotate',
          res.status,
          `no new key in the answer (looked for ${ROTATED_KEY_FIELDS.join(', ')}; fields present: ${Object.keys(body).join(', ') || 'none'})`,
        );
      return { ...body, secret };
    },
  };
}

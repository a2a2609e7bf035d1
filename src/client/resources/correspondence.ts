import type { CallOptions, Correspondence, CreateCorrespondenceInput, CreatedCorrespondence, IdempotentCallOptions } from '../types.js';
import { expectArray, expectObject, expectString } from '../validate.js';
import { listChangedCorrespondence } from './correspondence-listing.js';
import { notifyCreated, segment, type ResourceContext } from './context.js';

export function correspondenceResource(ctx: ResourceContext) {
  return {
    /** POST /correspondence with an Idempotency-Key, so a lost answer can be retried without sending twice. */
    async create(input: CreateCorrespondenceInput, options: IdempotentCallOptions = {}): Promise<CreatedCorrespondence> {
      const res = await ctx.transport.send({
        operation: 'correspondence.create',
        method: 'POST',
        path: '/correspondence',
        body: input,
        idempotencyKey: options.idempotencyKey ?? ctx.newIdempotencyKey(),
        signal: options.signal,
      });
      const body = expectObject('correspondence.create', res.status, res.body);
      expectString('correspondence.create', res.status, body, 'correspondence_id');
      const created = {
        ...body,
        participants: Array.isArray(body.participants) ? body.participants : [],
        queued: res.status === 202,
      } as CreatedCorrespondence;
      await notifyCreated(ctx, [created.correspondence_id]);
      return created;
    },

    /** GET {correspondencePath}: the spec names only the scope, so the path is configurable (POSTROOM_CORRESPONDENCE_PATH). */
    async get(correspondenceId: string, options: CallOptions = {}): Promise<Correspondence> {
      const path = ctx.correspondencePath.replace('{id}', segment('correspondenceId', correspondenceId));
      const res = await ctx.transport.send({ operation: 'correspondence.get', method: 'GET', path, signal: options.signal });
      const body = expectObject('correspondence.get', res.status, res.body);
      expectString('correspondence.get', res.status, body, 'correspondence_id');
      expectArray('correspondence.get', res.status, body, ['participants']);
      return { ...body, send_summary: body.send_summary ?? null } as Correspondence;
    },

    /** Files changed since a time, oldest change first (see correspondence-listing.ts for the assumed shape). */
    listChanged: (params: Parameters<typeof listChangedCorrespondence>[1] = {}, options: CallOptions = {}) =>
      listChangedCorrespondence(ctx, params, options),
  };
}

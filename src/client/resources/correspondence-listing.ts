import type { CallOptions, Correspondence, Page } from '../types.js';
import { expectArray, expectObject, invalidResponse, nextCursorOf } from '../validate.js';
import type { ResourceContext } from './context.js';

/** A file as the listing returns it: the GET /correspondence/{id} body plus when it last changed. */
export interface ChangedCorrespondence extends Correspondence {
  updated_at: string;
}

export interface ListChangedParams {
  /** Only files whose last change is at or after this instant. */
  updatedSince?: Date;
  limit?: number;
  cursor?: string;
}

/**
 * The one adapter for the correspondence listing. The spec lists the
 * correspondence.read operations as "not shown"; postroom assumes (docs/client.md,
 * docs/sandbox.md) `GET /correspondence?updated_since=&limit=&cursor=` answering
 * `{ correspondence: [...], next_cursor }`, oldest change first, each file with
 * `updated_at`. When the real shape is known, only this function changes.
 */
export async function listChangedCorrespondence(
  ctx: ResourceContext,
  params: ListChangedParams,
  options: CallOptions,
): Promise<Page<ChangedCorrespondence>> {
  const op = 'correspondence.listChanged';
  const path = ctx.correspondencePath.replace(/\/\{id\}.*$/, '') || '/correspondence';
  const res = await ctx.transport.send({
    operation: op,
    method: 'GET',
    path,
    query: { updated_since: params.updatedSince?.toISOString(), limit: params.limit, cursor: params.cursor },
    signal: options.signal,
  });
  const body = expectObject(op, res.status, res.body);
  const items = expectArray(op, res.status, body, ['correspondence', 'items', 'data']);
  for (const item of items) {
    const c = item as Partial<ChangedCorrespondence> | null;
    if (!c || typeof c !== 'object' || typeof c.correspondence_id !== 'string' || !Array.isArray(c.participants)) {
      throw invalidResponse(op, res.status, 'every listed file needs correspondence_id and participants');
    }
    if (typeof c.updated_at !== 'string' || Number.isNaN(Date.parse(c.updated_at)))
      throw invalidResponse(op, res.status, `file ${c.correspondence_id.slice(0, 100)} has no valid updated_at`);
  }
  return {
    items: (items as ChangedCorrespondence[]).map((c) => ({ ...c, send_summary: c.send_summary ?? null })),
    nextCursor: nextCursorOf(op, res.status, body),
  };
}

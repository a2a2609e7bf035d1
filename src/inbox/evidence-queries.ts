import type { Queryable } from '../db/types.js';
import { queryById } from './by-id.js';

/** What the sender proved: the exact bytes received and the signature header they came with. */
export interface DeliveryEvidence {
  rawBody: Buffer | null;
  signatureHeader: string | null;
  prunedAt: Date | null;
}

/** For on-call looking into a quarantined event without psql; undefined when no such event. */
export async function getDeliveryEvidence(q: Queryable, eventId: string): Promise<DeliveryEvidence | undefined> {
  const res = await queryById<{ raw_body: Uint8Array | null; signature_header: string | null; pruned_at: Date | null }>(
    q,
    'SELECT raw_body, signature_header, pruned_at FROM inbox WHERE %BY_ID%',
    [eventId],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  return { rawBody: row.raw_body ? Buffer.from(row.raw_body) : null, signatureHeader: row.signature_header, prunedAt: row.pruned_at };
}

import type { Queryable } from '../db/types.js';
import type { ServiceCorrespondence } from '../projection/compare.js';
import type { ServiceFile } from './synthetic-plan.js';

/** The service's answer to the latest re-read of one correspondence (migration 029). */
export interface StoredServiceState {
  read_at: Date;
  run_id: number | null;
  file: ServiceCorrespondence & { updated_at?: string | null };
}

/** The fields the comparison reads, and nothing else the service may add to its answer. */
function kept(file: ServiceFile): StoredServiceState['file'] {
  return {
    correspondence_id: file.correspondence_id,
    status: file.status,
    kind: file.kind ?? null,
    subject: file.subject ?? null,
    content_type: file.content_type ?? null,
    created_at: file.created_at ?? null,
    document_ids: file.document_ids ?? null,
    send_summary: file.send_summary ?? null,
    updated_at: file.updated_at ?? null,
    participants: (file.participants ?? []).map((p) => ({
      participant_id: p.participant_id,
      state: p.state,
      ref: p.ref ?? null,
      last_act: p.last_act ?? null,
    })),
  };
}

/** Keeps the newest answer: a slower re-read of the same file that finishes later does not replace a newer one. */
export async function saveServiceState(q: Queryable, file: ServiceFile, readAt: Date, runId: number | null): Promise<void> {
  await q.query(
    `INSERT INTO correspondence_service_state AS s (correspondence_id, read_at, run_id, file)
     VALUES ($1, $2, $3, $4::jsonb)
     ON CONFLICT (correspondence_id) DO UPDATE SET read_at = excluded.read_at, run_id = excluded.run_id, file = excluded.file
     WHERE s.read_at <= excluded.read_at`,
    [file.correspondence_id, readAt, runId, JSON.stringify(kept(file))],
  );
}

export async function getServiceState(q: Queryable, correspondenceId: string): Promise<StoredServiceState | undefined> {
  const res = await q.query<{ read_at: Date; run_id: string | number | null; file: StoredServiceState['file'] }>(
    'SELECT read_at, run_id, file FROM correspondence_service_state WHERE correspondence_id = $1',
    [correspondenceId],
  );
  const row = res.rows[0];
  if (!row) return undefined;
  return { read_at: new Date(row.read_at), run_id: row.run_id === null ? null : Number(row.run_id), file: row.file };
}

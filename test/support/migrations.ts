import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_MIGRATIONS_DIR } from '../../src/db/migrate.js';
import type { Queryable } from '../../src/db/types.js';

/**
 * A folder with the migrations an installation of an earlier release has
 * applied: those numbered below `version`. For upgrade tests; `cleanups`
 * receives its removal.
 */
export function migrationsBefore(version: number, cleanups: Array<() => Promise<void>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `postroom-before-${version}-`));
  for (const f of fs.readdirSync(DEFAULT_MIGRATIONS_DIR))
    if (Number(f.slice(0, 3)) < version) fs.copyFileSync(path.join(DEFAULT_MIGRATIONS_DIR, f), path.join(dir, f));
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Inserts rows as the writers of releases before the id ledger (migration 023) did: into the inbox alone,
 * received at the statement's now(), skipping ids already stored. For upgrade tests on the earlier layout,
 * where the current writer (which goes through the ledger) cannot run. Returns the ids inserted.
 */
export async function insertBeforeLedger(
  db: Queryable,
  rows: ReadonlyArray<{
    eventId: string;
    type: string;
    occurredAt: string | null;
    rawBody: Uint8Array | null;
    correspondenceId: string | null;
  }>,
): Promise<Set<string>> {
  const res = await db.query<{ event_id: string }>(
    `INSERT INTO inbox (event_id, type, occurred_at, raw_body, correspondence_id)
     SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bytea[], $5::text[])
     ON CONFLICT DO NOTHING RETURNING event_id`,
    [
      rows.map((r) => r.eventId),
      rows.map((r) => r.type),
      rows.map((r) => r.occurredAt),
      rows.map((r) => (r.rawBody ? Buffer.from(r.rawBody) : null)),
      rows.map((r) => r.correspondenceId),
    ],
  );
  return new Set(res.rows.map((r) => r.event_id));
}

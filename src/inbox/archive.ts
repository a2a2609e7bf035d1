import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createGunzip, createGzip } from 'node:zlib';
import type { Db, Queryable } from '../db/types.js';
import { PostroomError } from '../errors.js';
import { partitionPages } from './partition-queries.js';

/**
 * A partition written out before retention drops it (POSTROOM_ARCHIVE_DIR): gzip'd NDJSON, one line per
 * row, each the row as Postgres's to_jsonb gives it, every column as stored: raw_body (the exact signed
 * bytes) as bytea's hex text, the signature header and kept headers as they were, timestamps to the
 * microsecond. Beside it, `<file>.sha256` in sha256sum's format. Both are written to a temporary name,
 * flushed to disk and renamed, so a file under its final name is whole.
 */

/** Heap pages read per query while archiving. */
const ARCHIVE_PAGES_PER_READ = 256;

export interface ArchiveResult {
  file: string;
  rows: number;
  bytes: number;
  sha256: string;
}

async function writeDurably(file: string, write: (out: fs.WriteStream) => Promise<void>): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  const out = fs.createWriteStream(temporary, { flags: 'w', mode: 0o600 });
  try {
    await write(out);
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    const fd = await fs.promises.open(temporary, 'r');
    try {
      await fd.sync();
    } finally {
      await fd.close();
    }
    await fs.promises.rename(temporary, file);
  } catch (err) {
    out.destroy();
    await fs.promises.rm(temporary, { force: true });
    throw err;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const fd = await fs.promises.open(dir, 'r');
  try {
    await fd.sync();
  } finally {
    await fd.close();
  }
}

/** Writes one partition to `<dir>/<partition>.ndjson.gz` and its checksum file; throws when any step fails. */
export async function archivePartition(
  q: Queryable,
  partition: string,
  dir: string,
  onProgress?: (done: number, total: number) => void,
): Promise<ArchiveResult> {
  await fs.promises.mkdir(dir, { recursive: true });
  const file = path.join(dir, `${partition}.ndjson.gz`);
  const pages = await partitionPages(q, partition);
  const hash = createHash('sha256');
  let rows = 0;
  let bytes = 0;
  await writeDurably(file, async (out) => {
    const gzip = createGzip();
    gzip.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    gzip.pipe(out, { end: false });
    const ended = new Promise<void>((resolve, reject) => {
      gzip.on('end', resolve);
      gzip.on('error', reject);
    });
    for (let from = 0; from < pages; from += ARCHIVE_PAGES_PER_READ) {
      const to = Math.min(pages, from + ARCHIVE_PAGES_PER_READ);
      const res = await q.query<{ line: string }>(
        `SELECT to_jsonb(p)::text AS line FROM ${quoteIdent(partition)} p WHERE ctid >= $1::tid AND ctid < $2::tid`,
        [`(${from},0)`, `(${to},0)`],
      );
      for (const r of res.rows) {
        if (!gzip.write(`${r.line}\n`)) await new Promise((resolve) => gzip.once('drain', resolve));
        rows++;
      }
      onProgress?.(to, pages);
    }
    gzip.end();
    await ended;
  });
  const sha256 = hash.digest('hex');
  await writeDurably(`${file}.sha256`, async (out) => {
    out.write(`${sha256}  ${path.basename(file)}\n`);
  });
  await syncDirectory(dir);
  return { file, rows, bytes, sha256 };
}

/** The sha256 a checksum file names for `file`; throws when the file is missing or names another file. */
async function expectedChecksum(file: string): Promise<string> {
  let text: string;
  try {
    text = await fs.promises.readFile(`${file}.sha256`, 'utf8');
  } catch {
    throw new PostroomError(
      'archive_checksum_missing',
      `${file}.sha256 is missing: an archive is restored only when its checksum file is beside it (sha256sum format)`,
    );
  }
  const m = /^([0-9a-f]{64}) [ *](.+)$/m.exec(text.trim());
  if (!m || m[2] !== path.basename(file)) {
    throw new PostroomError('archive_checksum_invalid', `${file}.sha256 does not name ${path.basename(file)} with a sha256`);
  }
  return m[1]!;
}

export interface RestoreResult {
  file: string;
  rows: number;
  /** Rows put back into the inbox. */
  restored: number;
  /** Rows the inbox holds already (a second restore of the same file, or a partition not yet dropped). */
  present: number;
}

const RESTORE_ROWS_PER_BATCH = 2000;

/**
 * Verifies an archive against its checksum, then puts its rows back into the inbox as they were (status
 * included: a processed event stays processed, and no worker runs it again), creating the partitions
 * their days need. Ids go into the ledger first, where they normally are already; a row the inbox holds
 * already is left alone, so restoring twice changes nothing.
 */
export async function restoreArchive(db: Db, file: string, onProgress?: (rows: number) => void): Promise<RestoreResult> {
  const expected = await expectedChecksum(file);
  const actual = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) actual.update(chunk as Buffer);
  if (actual.digest('hex') !== expected) {
    throw new PostroomError(
      'archive_checksum_mismatch',
      `${file} does not match its checksum: it was changed or cut short; nothing was restored`,
    );
  }
  const result: RestoreResult = { file, rows: 0, restored: 0, present: 0 };
  let batch: string[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const lines = batch;
    batch = [];
    const restored = await db.transaction((tx) => restoreRows(tx, lines));
    result.restored += restored;
    result.present += lines.length - restored;
    onProgress?.(result.rows);
  };
  let rest = '';
  for await (const chunk of fs.createReadStream(file).pipe(createGunzip())) {
    const text = rest + (chunk as Buffer).toString('utf8');
    const lines = text.split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (line === '') continue;
      batch.push(line);
      result.rows++;
      if (batch.length >= RESTORE_ROWS_PER_BATCH) await flush();
    }
  }
  if (rest !== '') {
    batch.push(rest);
    result.rows++;
  }
  await flush();
  return result;
}

async function restoreRows(tx: Queryable, lines: string[]): Promise<number> {
  await tx.query(
    `SELECT inbox_partition_create(d) FROM (
       SELECT DISTINCT (r.received_at AT TIME ZONE 'UTC')::date AS d
       FROM jsonb_populate_recordset(NULL::inbox, $1::jsonb) r) days`,
    [`[${lines.join(',')}]`],
  );
  const res = await tx.query<{ n: number }>(
    `WITH r AS MATERIALIZED (SELECT * FROM jsonb_populate_recordset(NULL::inbox, $1::jsonb)),
     ledger AS (INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM r ON CONFLICT DO NOTHING),
     put AS (
       INSERT INTO inbox SELECT r.* FROM r
       WHERE NOT EXISTS (SELECT 1 FROM inbox i WHERE i.event_id = r.event_id AND i.received_at = r.received_at)
       RETURNING 1)
     SELECT count(*)::int AS n FROM put`,
    [`[${lines.join(',')}]`],
  );
  return Number(res.rows[0]?.n ?? 0);
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

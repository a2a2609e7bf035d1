import { PLANES, type Plane } from './catalogue.js';
import { apiErrors } from './errors.js';
import type { Correspondence } from './state.js';

/**
 * The order `GET /correspondence` pages in: per plane, every state change of a file gives
 * it the next sequence number and moves it to the end. A walk that resumes after the last
 * sequence it saw therefore misses no change made meanwhile (the changed file is ahead of
 * it) and sees no file twice unless it changed again in between.
 *
 * Each plane keeps an append-only array of (seq, file); a file's earlier entries go stale
 * when it changes (its `changeSeq` moves on) and are compacted away once they outnumber
 * the live ones, so a page is a binary search plus a short scan.
 */
export interface ChangeLog {
  /** The file changed at `at` (epoch ms): next sequence number, `updatedAt`, end of the order. */
  record(c: Correspondence, at: number): void;
  page(
    plane: Plane,
    query: { afterSeq: number; updatedSince: number | undefined; limit: number },
  ): { items: Correspondence[]; more: boolean };
}

interface Entry {
  seq: number;
  file: Correspondence;
  /** The largest updatedAt up to and including this entry: monotone even if the clock stepped back, so it can be binary-searched. */
  maxAt: number;
}

interface PlaneLog {
  seq: number;
  entries: Entry[];
  live: number;
}

export function createChangeLog(): ChangeLog {
  const planes = new Map<Plane, PlaneLog>(PLANES.map((p) => [p, { seq: 0, entries: [], live: 0 }]));

  const compact = (log: PlaneLog): void => {
    const kept = log.entries.filter((e) => e.file.changeSeq === e.seq);
    let max = -Infinity;
    for (const e of kept) {
      max = Math.max(max, e.file.updatedAt);
      e.maxAt = max;
    }
    log.entries = kept;
  };

  /** First index whose key is at least `value`. */
  const lowerBound = (entries: Entry[], key: (e: Entry) => number, value: number): number => {
    let lo = 0;
    let hi = entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (key(entries[mid]!) < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  return {
    record(c, at) {
      const log = planes.get(c.plane)!;
      if (c.changeSeq === 0) log.live++;
      c.changeSeq = ++log.seq;
      c.updatedAt = at;
      const prev = log.entries[log.entries.length - 1];
      log.entries.push({ seq: c.changeSeq, file: c, maxAt: Math.max(prev?.maxAt ?? -Infinity, at) });
      if (log.entries.length > 2 * log.live + 64) compact(log);
    },
    page(plane, { afterSeq, updatedSince, limit }) {
      const { entries } = planes.get(plane)!;
      let i = lowerBound(entries, (e) => e.seq, afterSeq + 1);
      if (updatedSince !== undefined)
        i = Math.max(
          i,
          lowerBound(entries, (e) => e.maxAt, updatedSince),
        );
      const items: Correspondence[] = [];
      for (; i < entries.length; i++) {
        const e = entries[i]!;
        if (e.file.changeSeq !== e.seq) continue;
        if (updatedSince !== undefined && e.file.updatedAt < updatedSince) continue;
        if (items.length === limit) return { items, more: true };
        items.push(e.file);
      }
      return { items, more: false };
    },
  };
}

/** Opaque to clients: the plane and the last sequence returned. */
export function encodeChangeCursor(plane: Plane, seq: number): string {
  return Buffer.from(`c1:${plane}:${seq}`, 'utf8').toString('base64url');
}

export function decodeChangeCursor(cursor: string, plane: Plane): number {
  const text = cursor.length <= 200 ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const m = /^c1:(sandbox|live):(\d{1,15})$/.exec(text);
  if (!m) throw apiErrors.invalid('cursor', 'not a cursor this API returned; pass next_cursor back unchanged');
  if (m[1] !== plane)
    throw apiErrors.invalid('cursor', `this cursor was returned on the ${m[1]} plane; a key of the ${plane} plane cannot use it`);
  return Number(m[2]);
}

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import type { CorrespondenceView, Sandbox } from '../../src/sandbox/index.js';
import { call, letter, NIN, sandbox } from './helpers.js';

// GET /sender/v2/correspondence: the reconciler's listing (the spec shows no correspondence.read operation,
// so its shape is the sandbox's assumption, documented in docs/sandbox.md).
const SANDBOX = 'svc_sandbox_listing';
const LIVE = 'svc_live_listing';
const NO_READ = 'svc_sandbox_listing_noread';

type Listed = CorrespondenceView & { updated_at: string };
type Page = { correspondence: Listed[]; next_cursor: string | null };

function tickingClock(start = Date.parse('2026-04-01T08:00:00.000Z')): Clock {
  let t = start;
  return { now: () => t++ };
}

const page = async (sb: Sandbox, query: string, key = SANDBOX): Promise<Page> => {
  const res = await call(sb.url, 'GET', `/sender/v2/correspondence${query ? `?${query}` : ''}`, { key });
  expect(res.status).toBe(200);
  return res.body;
};

async function walk(
  sb: Sandbox,
  query: string,
  between?: (pageIndex: number) => void | Promise<void>,
  key = SANDBOX,
  from: string | null = null,
): Promise<Listed[][]> {
  const pages: Listed[][] = [];
  let cursor: string | null = from;
  do {
    const p: Page = await page(sb, [query, cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&'), key);
    pages.push(p.correspondence);
    cursor = p.next_cursor;
    if (cursor) await between?.(pages.length - 1);
  } while (cursor);
  return pages;
}

const send = (sb: Sandbox, key: string, ref: string) =>
  call(sb.url, 'POST', '/sender/v2/correspondence', {
    key,
    body: letter([
      { nin: NIN.delivered, ref },
      { nin: NIN.held, ref: `${ref}-held` },
    ]),
  });

describe('GET /correspondence', () => {
  let sb: Sandbox;
  const ids: string[] = [];
  let liveId: string;

  beforeAll(async () => {
    sb = await sandbox({ keys: [SANDBOX, LIVE, { key: NO_READ, scopes: ['correspondence.write'] }], clock: tickingClock() });
    for (let i = 0; i < 5; i++) ids.push((await send(sb, SANDBOX, `r${i}`)).body.correspondence_id);
    liveId = (await send(sb, LIVE, 'live')).body.correspondence_id;
  });
  afterAll(() => sb.close());

  it('lists the plane’s files in change order, each exactly as GET /correspondence/{id} shows it, with updated_at', async () => {
    const p = await page(sb, '');
    expect(p.correspondence.map((c) => c.correspondence_id)).toEqual(ids);
    expect(p.next_cursor).toBeNull();
    for (const c of p.correspondence) {
      expect(c).toEqual((await call(sb.url, 'GET', `/sender/v2/correspondence/${c.correspondence_id}`, { key: SANDBOX })).body);
      expect(c.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const live = await page(sb, '', LIVE);
    expect(live.correspondence.map((c) => c.correspondence_id)).toEqual([liveId]);
  });

  it('pages with limit and cursor; a change moves the file to the end', async () => {
    const first = await page(sb, 'limit=2');
    expect(first.correspondence.map((c) => c.correspondence_id)).toEqual(ids.slice(0, 2));
    expect(first.next_cursor).toEqual(expect.any(String));
    // ids[0] changes after the walk passed it: it comes again, later, because it changed.
    const acted = sb.control.act(sb.control.correspondence(ids[0]!).participants[0]!.participant_id, 'read');
    const rest = await walk(sb, 'limit=2', undefined, SANDBOX, first.next_cursor);
    expect(rest.flat().map((c) => c.correspondence_id)).toEqual([...ids.slice(2), ids[0]]);
    expect(rest.flat().at(-1)!.updated_at).toBe(acted[0]!.at);
  });

  it('updated_since keeps only files changed at or after it', async () => {
    const all = (await page(sb, 'limit=200')).correspondence;
    const since = all[3]!.updated_at;
    const recent = (await page(sb, `updated_since=${encodeURIComponent(since)}`)).correspondence;
    expect(recent.map((c) => c.correspondence_id)).toEqual(all.slice(3).map((c) => c.correspondence_id));
    expect(recent.every((c) => c.updated_at >= since)).toBe(true);
    expect((await page(sb, 'updated_since=2999-01-01T00:00:00Z')).correspondence).toEqual([]);
  });

  it('refuses bad parameters with 400 naming them, and a key without correspondence.read with 403', async () => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=ten', 'limit'],
      ['updated_since=yesterday', 'updated_since'],
      ['updated_since=2026-13-45T00:00:00Z', 'updated_since'],
      ['cursor=garbage', 'cursor'],
    ] as const) {
      const res = await call(sb.url, 'GET', `/sender/v2/correspondence?${query}`, { key: SANDBOX });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field });
    }
    // A cursor of the other plane is not a cursor of this one.
    const liveCursor = (await page(sb, 'limit=1', LIVE)).next_cursor;
    expect(liveCursor).toBeNull();
    await send(sb, LIVE, 'live-2');
    const livePage = await page(sb, 'limit=1', LIVE);
    const crossed = await call(sb.url, 'GET', `/sender/v2/correspondence?cursor=${encodeURIComponent(livePage.next_cursor!)}`, {
      key: SANDBOX,
    });
    expect(crossed.status).toBe(400);
    expect(crossed.body.error.field).toBe('cursor');
    const refused = await call(sb.url, 'GET', '/sender/v2/correspondence', { key: NO_READ });
    expect(refused.status).toBe(403);
    expect(refused.body.error.required_scope).toBe('correspondence.read');
  });
});

describe('paging while writes continue', () => {
  type Write = { kind: 'create' } | { kind: 'act' | 'attach' | 'verify' | 'seal'; file: number };
  const write: fc.Arbitrary<Write> = fc.oneof(
    fc.constant<Write>({ kind: 'create' }),
    fc.record({ kind: fc.constantFrom('act' as const, 'attach' as const, 'verify' as const, 'seal' as const), file: fc.nat(40) }),
  );

  const apply = (sb: Sandbox, w: Write, files: string[]): void => {
    if (w.kind === 'create') {
      files.push(sb.control.trigger('correspondence.created').fired[0]!.correspondence_id!);
      return;
    }
    const id = files[w.file % files.length]!;
    const c = sb.control.correspondence(id);
    if (c.status !== 'live') return;
    try {
      if (w.kind === 'act') sb.control.act(c.participants[0]!.participant_id, 'read');
      else if (w.kind === 'attach') sb.control.attach(id);
      else if (w.kind === 'seal') sb.control.seal(id);
      else sb.control.verifyParticipant(c.participants[1]!.participant_id);
    } catch {
      // A refused move (participant not held any more) changes nothing, which is what the property allows.
    }
  };

  it('property: every file appears, in its latest state; a file appears again only after it changed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 7 }),
        fc.array(fc.array(write, { maxLength: 6 }), { minLength: 1, maxLength: 12 }),
        async (limit, rounds) => {
          const sb = await sandbox({ keys: [SANDBOX], clock: tickingClock() });
          try {
            const files: string[] = [];
            for (let i = 0; i < 12; i++) files.push((await send(sb, SANDBOX, `p${i}`)).body.correspondence_id);
            const before = new Set(files);
            // Writes between the first pages only: writing more than a page per page would never let the walk end.
            const pages = await walk(sb, `limit=${limit}`, (i) => {
              for (const w of rounds[i] ?? []) apply(sb, w, files);
            });
            const seen = pages.flat();
            // Nothing that existed before the walk is missed.
            for (const id of before) expect(seen.some((c) => c.correspondence_id === id)).toBe(true);
            // Every page but the last is full.
            for (const p of pages.slice(0, -1)) expect(p).toHaveLength(limit);
            // A second appearance is a later state: the file changed in between (the ticking clock makes every change a new instant).
            const last = new Map<string, Listed>();
            for (const c of seen) {
              const prev = last.get(c.correspondence_id);
              if (prev) expect(c.updated_at > prev.updated_at).toBe(true);
              last.set(c.correspondence_id, c);
            }
            // No holes: every change made before the last page was read is in the walk, so each file's last appearance is its state now.
            for (const id of files) expect(last.get(id)).toEqual(sb.control.correspondence(id));
          } finally {
            await sb.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 60_000);

  it('with concurrent writers over HTTP: no file from before the walk is missed, none repeats without a change', async () => {
    const sb = await sandbox({ keys: [SANDBOX], clock: tickingClock(), queueDelayMs: 1 });
    try {
      const before: string[] = [];
      for (let i = 0; i < 60; i++) before.push((await send(sb, SANDBOX, `c${i}`)).body.correspondence_id);
      let walking = true;
      const writer = async (n: number): Promise<void> => {
        for (let i = 0; walking; i++) {
          const id = before[(i * 7 + n) % before.length]!;
          const c = sb.control.correspondence(id);
          if (i % 3 === 0)
            await call(sb.url, 'POST', '/sender/v2/correspondence', {
              key: SANDBOX,
              body: letter([{ nin: NIN.delivered, ref: `w${n}-${i}` }]),
              headers: { 'x-sandbox-send-mode': 'queued' },
            });
          else if (c.status === 'live')
            await call(sb.url, 'POST', `/sandbox/participants/${c.participants[0]!.participant_id}/act`, {
              key: SANDBOX,
              body: { act: 'read' },
            });
        }
      };
      const writers = [writer(0), writer(1), writer(2)];
      const pages = await walk(sb, 'limit=5');
      walking = false;
      await Promise.all(writers);
      const seen = pages.flat();
      for (const id of before) expect(seen.some((c) => c.correspondence_id === id)).toBe(true);
      const last = new Map<string, string>();
      for (const c of seen) {
        const prev = last.get(c.correspondence_id);
        if (prev !== undefined) expect(c.updated_at > prev).toBe(true);
        last.set(c.correspondence_id, c.updated_at);
      }
    } finally {
      await sb.close();
    }
  }, 60_000);
});

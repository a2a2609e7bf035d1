import { spawn, type ChildProcess } from 'node:child_process';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgDb } from '../../src/db/pg.js';
import { migrate } from '../../src/db/migrate.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { nodeScript, ROOT } from '../support/process.js';
import { countByStatus, createEffectsTable, envelope, insertEnvelopes, waitFor, type Envelope } from './support.js';

const FIXTURE = 'test/worker/fixtures/worker-process.ts';
const pg = await adminUrl();

interface WorkerProcess {
  id: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<void>;
}

/** `perCorrespondence` acts for each of `correspondences`, one second apart, act_<n> carrying the order. */
function workload(correspondences: number, perCorrespondence: number): Envelope[] {
  const out: Envelope[] = [];
  for (let c = 0; c < correspondences; c++) {
    for (let i = 0; i < perCorrespondence; i++) {
      out.push(
        envelope(
          'participant.acted',
          { correspondence_id: `cor_${c}`, participant_id: `p${i % 4}`, act: `act_${i}`, ref: 'r' },
          new Date(Date.UTC(2026, 0, 1, 0, 0, i, c)),
        ),
      );
    }
  }
  return fc.sample(fc.shuffledSubarray(out, { minLength: out.length }), { seed: 42, numRuns: 1 })[0]!;
}

describe.runIf(pg)('several worker processes on one Postgres', () => {
  let database: TestDatabase | undefined;
  let db: Db | undefined;
  const processes: WorkerProcess[] = [];

  async function setUp(): Promise<Db> {
    database = await createPostgresDatabase();
    db = createPgDb({ url: database.url, poolSize: 3, logger: silentLogger() });
    await migrate(db);
    await createEffectsTable(db);
    return db;
  }

  function startWorker(id: string, env: Record<string, string> = {}): WorkerProcess {
    const child = spawn(process.execPath, nodeScript(FIXTURE), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', DATABASE_URL: database!.url, WORKER_ID: id, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const p = { id, child, output: () => out, exited };
    processes.push(p);
    return p;
  }

  const ready = (p: WorkerProcess, line = 'ready'): Promise<true> =>
    waitFor(
      async () => {
        if (p.child.exitCode !== null) throw new Error(`${p.id} exited early:\n${p.output()}`);
        return p.output().includes(line);
      },
      `${p.id} to print "${line}"`,
      30_000,
    );

  afterEach(async () => {
    for (const p of processes.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 8000);
        await p.exited;
        clearTimeout(timer);
      }
    }
    await db?.close();
    await database?.drop();
    db = undefined;
    database = undefined;
  });

  async function expectEveryEffectOnce(store: Db, total: number): Promise<void> {
    const effects = await store.query<{ rows: number; max_n: number }>('SELECT count(*)::int AS rows, max(n)::int AS max_n FROM effects');
    expect(effects.rows[0]).toEqual({ rows: total, max_n: 1 });
    expect(await countByStatus(store)).toEqual({ processed: total });
  }

  it('three processes handle 5,000 events: every effect lands exactly once, each correspondence in order', async () => {
    const store = await setUp();
    const workers = ['w1', 'w2', 'w3'].map((id) => startWorker(id));
    await Promise.all(workers.map((w) => ready(w)));
    // One delivery of everything, shuffled, so every event's predecessors are in the inbox before any runs.
    await insertEnvelopes(store, workload(250, 20));
    await waitFor(async () => (await countByStatus(store)).processed === 5000, 'all 5,000 events processed', 50_000, 100);

    await expectEveryEffectOnce(store, 5000);
    // Each event's handler ran after the previous event of its correspondence had committed.
    const outOfOrder = await store.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT seq, lag(seq) OVER (PARTITION BY correspondence_id ORDER BY written_at) AS prev FROM effects) x
       WHERE prev IS NOT NULL AND prev > seq`,
    );
    expect(outOfOrder.rows[0]!.n).toBe(0);
    // The work was shared (each process's connections carry its id as application_name).
    const byWorker = await store.query<{ worker: string }>('SELECT DISTINCT worker FROM effects ORDER BY worker');
    expect(byWorker.rows.map((r) => r.worker)).toEqual(['w1', 'w2', 'w3']);
  }, 60_000);

  it('a worker killed with SIGKILL mid-batch loses nothing: the others finish everything, exactly once', async () => {
    const store = await setUp();
    const events = workload(100, 20);
    await insertEnvelopes(store, events.slice(0, 1000));
    const victim = startWorker('victim', { LEASE_SECONDS: '2', HANG_AFTER: '120' });
    await ready(victim, 'hanging');
    victim.child.kill('SIGKILL');
    await victim.exited;
    // Its backends may still be finishing what they had received (a claim's COMMIT) until they see the socket close.
    await waitFor(
      async () =>
        (
          await store.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'victim'`,
          )
        ).rows[0]!.n === 0,
      "the victim's connections to close",
      10_000,
    );
    // Counted once it is gone: until then its other loops may still finish a batch and claim the next one.
    const held = await store.query<{ n: number }>(
      `SELECT coalesce(sum(cardinality(event_ids)), 0)::int AS n FROM inbox_attempts WHERE worker_id = 'victim'`,
    );
    expect(held.rows[0]!.n).toBeGreaterThan(0);

    const survivors = ['s1', 's2'].map((id) => startWorker(id, { LEASE_SECONDS: '2' }));
    await Promise.all(survivors.map((w) => ready(w)));
    // The rest arrives while they work.
    for (let i = 1000; i < events.length; i += 250) await insertEnvelopes(store, events.slice(i, i + 250));
    await waitFor(async () => (await countByStatus(store)).processed === 2000, 'all 2,000 events processed', 50_000, 200);

    await expectEveryEffectOnce(store, 2000);
    const reclaimed = await store.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM inbox WHERE last_error LIKE 'lease expired: worker victim%'`,
    );
    expect(reclaimed.rows[0]!.n).toBe(held.rows[0]!.n);
  }, 60_000);
});

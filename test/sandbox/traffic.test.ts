import { afterEach, describe, expect, it } from 'vitest';
import { startTraffic, type Sandbox } from '../../src/sandbox/index.js';
import { sandbox } from './helpers.js';

const open: Sandbox[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});
const start = async (): Promise<Sandbox> => {
  const sb = await sandbox();
  open.push(sb);
  return sb;
};

describe('traffic generator', () => {
  it('runs a bounded, realistic mix and reports what it did', async () => {
    const sb = await start();
    const run = startTraffic({
      target: sb,
      seed: 5,
      ratePerSecond: 5_000,
      maxOperations: 300,
      failureWindows: { everyOperations: 100, durationMs: 1 },
    });
    const counters = await run.done;
    await sb.control.waitForIdle();
    expect(counters.operations).toBe(300);
    expect(counters.errors).toBe(0);
    expect(counters.failureWindows).toBe(3);
    expect(counters.directSends).toBeGreaterThan(0);
    expect(counters.queuedSends).toBeGreaterThan(0);
    for (const k of ['acts', 'verifications', 'seals', 'withdrawals', 'attachments', 'claims'] as const)
      expect(counters[k], k).toBeGreaterThan(0);
    expect(counters.correspondences).toBe(counters.directSends + counters.queuedSends);
    expect(sb.control.stats().correspondences).toBe(counters.correspondences);
    expect(sb.control.events({ type: 'correspondence.created' })).toHaveLength(counters.correspondences);
    expect(sb.control.events({ type: 'correspondence.sealed' })).toHaveLength(counters.seals);
    // Counted when the run ended; queued sends may still have completed after that.
    expect(counters.events).toBeGreaterThan(counters.correspondences);
    expect(counters.events).toBeLessThanOrEqual(sb.control.stats().events);
    const statuses = new Set(sb.control.listCorrespondence().map((c) => c.status));
    expect(statuses).toEqual(new Set(['live', 'sealed', 'withdrawn']));
  });

  it('makes the same decisions for the same seed', async () => {
    const once = async (seed: number) => {
      const sb = await start();
      const c = await startTraffic({ target: sb, seed, ratePerSecond: 5_000, maxOperations: 150, queuedShare: 0, failureWindows: false })
        .done;
      const shape = sb.control
        .listCorrespondence()
        .map((x) => [x.kind, x.subject, x.status, x.participants.map((p) => [p.state, p.last_act])]);
      return { c: { ...c, events: sb.control.stats().events }, shape, types: sb.control.events().map((e) => e.type) };
    };
    const a = await once(21);
    const b = await once(21);
    const other = await once(22);
    expect(b).toEqual(a);
    expect(other.types).not.toEqual(a.types);
  });

  it('stops on demand and by time', async () => {
    const sb = await start();
    const run = startTraffic({ target: sb, seed: 1, ratePerSecond: 200 });
    while (run.counters().operations < 5) await new Promise((r) => setTimeout(r, 10));
    const stopped = await run.stop();
    expect(stopped.operations).toBeGreaterThanOrEqual(5);
    await new Promise((r) => setTimeout(r, 50));
    expect(run.counters().operations).toBe(stopped.operations);
    expect(await run.done).toEqual(stopped);

    const timed = await startTraffic({ target: sb, ratePerSecond: 1_000, durationMs: 100 }).done;
    expect(timed.operations).toBeGreaterThan(0);
    expect(timed.seed).toEqual(expect.any(Number));
  });

  it('counts refusals instead of failing, e.g. a key without the scopes it needs', async () => {
    const sb = await sandbox({ keys: ['svc_sandbox_readonly:webhooks.read'] });
    open.push(sb);
    const c = await startTraffic({ target: sb, seed: 1, ratePerSecond: 5_000, maxOperations: 5, failureWindows: false }).done;
    expect(c.errors).toBeGreaterThanOrEqual(5);
    expect(c.correspondences).toBe(0);
    expect(c.lastError).toMatch(/403 insufficient_scope/);
  });
});

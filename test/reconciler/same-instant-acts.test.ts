import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/app/server.js';
import type { Clock } from '../../src/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { compareWithService } from '../../src/projection/compare.js';
import { getProjectedCorrespondence } from '../../src/projection/read.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { settle as settleWorker, startEndpointReceiver } from '../support/reconcile-e2e.js';

const pg = await adminUrl();

/**
 * Two acts of one participant in the same millisecond, one of them delivered and the other
 * dead. The service shows only the latest; the event ids say nothing of their order. Found by
 * CI as an intermittent failure of reconcile-e2e.test.ts (the traffic acts concurrently):
 * reconcile wrote nothing for an act at the instant the read model already had, so the
 * projection kept the superseded act and differed from the service. Here the sandbox's clock
 * is held for each pair, so the tie happens every run.
 */
describe.skipIf(!pg)('acts in the same millisecond (reconcile end to end)', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let receiver: RunningServer | undefined;
  let port: number;
  let secret: string;
  let postroom: Postroom;
  let env: Record<string, string>;
  let held: number | undefined;
  const clock: Clock = { now: () => held ?? Date.now() };

  const startReceiver = (): Promise<RunningServer> => startEndpointReceiver(store.db, port, secret);

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 6 });
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.05, 0.1], attemptTimeoutMs: 500, seed: 20261125, clock });
    port = await freePort();
    const endpoint = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    secret = endpoint.secret;
    receiver = await startReceiver();
    postroom = createPostroom({
      db: store.db,
      logger: silentLogger(),
      worker: { concurrency: 2, pollIntervalMs: 20, orderingHoldSeconds: 1 },
    });
    await postroom.start();
    env = { DATABASE_URL: store.url!, POSTROOM_API_BASE_URL: sandbox.url, POSTROOM_API_KEY: sandbox.apiKey };
  }, 60_000);

  afterAll(async () => {
    await postroom?.stop(2000);
    await receiver?.close();
    await sandbox?.close();
    await store?.cleanup();
  });

  /** Waits until every delivery has settled and the worker has processed everything stored. */
  async function settle(): Promise<void> {
    await sandbox.control.waitForIdle(20_000);
    await settleWorker(postroom, store.db);
  }

  const newFile = async (): Promise<{ correspondenceId: string; participantId: string }> => {
    const res = await fetch(`${sandbox.url}/sender/v2/correspondence`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sandbox.apiKey}`, 'content-type': 'application/json', 'x-sandbox-send-mode': 'direct' },
      body: JSON.stringify({
        kind: 'letter',
        subject: 'Tie',
        content_type: 'text/plain',
        document_ids: [],
        recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, ref: `r-${Math.random().toString(36).slice(2, 8)}` }],
      }),
    });
    const json = (await res.json()) as { correspondence_id: string; participants: Array<{ participant_id: string }> };
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return { correspondenceId: json.correspondence_id, participantId: json.participants[0]!.participant_id };
  };

  /** One act at the held instant; its delivery goes dead when the receiver is down. */
  const actAt = async (at: number, participantId: string, act: 'signed' | 'consent_declined', receiverUp: boolean): Promise<string> => {
    if (!receiverUp && receiver) {
      await receiver.close();
      receiver = undefined;
    }
    if (receiverUp && !receiver) receiver = await startReceiver();
    held = at;
    const [event] = sandbox.control.act(participantId, act);
    held = undefined;
    await settle();
    return event!.event_id;
  };

  it('reconcile leaves the projection equal to the service and accounts for the dead act of the pair, whichever of the two died', async () => {
    // Pair 1: the earlier act is delivered, the latest (what the service shows) goes dead.
    const one = await newFile();
    // Pair 2: the earlier act goes dead, the latest is delivered.
    const two = await newFile();
    await settle();
    const t1 = Date.now();
    await actAt(t1, one.participantId, 'consent_declined', true);
    const deadLatest = await actAt(t1, one.participantId, 'signed', false);
    const t2 = Date.now();
    const deadEarlier = await actAt(t2, two.participantId, 'consent_declined', false);
    await actAt(t2, two.participantId, 'signed', true);
    const dead = sandbox.control.deliveries({ status: 'dead', limit: 100 }).deliveries.map((d) => d.event_id);
    expect(dead.sort()).toEqual([deadLatest, deadEarlier].sort());

    const first = await runCli(['reconcile', '--json'], env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    await settle();

    for (const { correspondenceId } of [one, two]) {
      const service = sandbox.control.correspondence(correspondenceId);
      expect(service.participants[0]).toMatchObject({ last_act: 'signed' });
      expect(compareWithService(await getProjectedCorrespondence(store.db, correspondenceId), service), correspondenceId).toEqual([]);
    }
    const gaps = (await store.db.query<{ event_id: string; status: string }>('SELECT event_id, status FROM reconcile_gaps')).rows;
    expect(Object.fromEntries(gaps.map((g) => [g.event_id, g.status]))).toEqual({
      [deadLatest]: 'recovered',
      [deadEarlier]: 'state_synced',
    });

    // Nothing new on a second run: the re-read act stays the latest however the ids compare.
    const second = await runCli(['reconcile', '--json'], env);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ gaps_found: 0, synthetic_events_written: 0, gaps_open: 0 });
  }, 60_000);
});

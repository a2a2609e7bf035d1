import { request, type Dispatcher } from 'undici';
import { describeError } from '../errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { outcomeFor, type Addressing } from './addressing.js';
import { PARTICIPANT_ACTS } from './catalogue.js';
import { createPrng, randomSeed, type Prng } from './prng.js';

export type TrafficOp = 'send' | 'act' | 'verify' | 'seal' | 'withdraw' | 'attach' | 'claim' | 'campaign';

export interface TrafficOptions {
  /** A running sandbox: its base URL (no /sender/v2) and a key. A `Sandbox` is one. */
  target: { readonly url: string; readonly apiKey: string };
  /** Same seed, same sequence of decisions. Default random (reported in the counters). */
  seed?: number;
  /** Operations per second (each is one or two HTTP calls). Default 20. */
  ratePerSecond?: number;
  /** Stop after this many operations. */
  maxOperations?: number;
  /** Stop after this many correspondences were created. */
  maxCorrespondences?: number;
  /** Stop after this long. */
  durationMs?: number;
  /** Relative weights of the operations. */
  mix?: Partial<Record<TrafficOp, number>>;
  /** Share of sends made as queued (202) sends. Default 0.3. */
  queuedShare?: number;
  /** Every `everyOperations` operations, open a failure window of `durationMs` (deliveries inside it fail and, if it outlasts the retries, go dead). `false` for none. */
  failureWindows?: { everyOperations: number; durationMs: number; endpointId?: string } | false;
  http?: Dispatcher;
  logger?: Logger;
  /**
   * Called with each correspondence the generator sends, as the organisation's backend
   * would record what it sent (postroom's reconciler re-reads from that ledger).
   */
  onCorrespondenceCreated?: (correspondenceId: string) => void | Promise<void>;
}

export interface TrafficCounters {
  seed: number;
  operations: number;
  correspondences: number;
  directSends: number;
  queuedSends: number;
  recipients: number;
  acts: number;
  verifications: number;
  seals: number;
  withdrawals: number;
  attachments: number;
  claims: number;
  campaigns: number;
  failureWindows: number;
  /** Operations that found nothing to act on (e.g. no delivered participant yet). */
  skipped: number;
  errors: number;
  lastError: string | undefined;
  /** Events the sandbox generated while the generator ran (from its stats). */
  events: number;
}

export interface TrafficRun {
  counters(): TrafficCounters;
  /** Resolves when a bound is reached (or after stop()). */
  readonly done: Promise<TrafficCounters>;
  /** Stops after the operation in progress. */
  stop(): Promise<TrafficCounters>;
}

export const DEFAULT_MIX: Readonly<Record<TrafficOp, number>> = {
  send: 30,
  act: 30,
  verify: 6,
  seal: 10,
  withdraw: 4,
  attach: 6,
  claim: 4,
  campaign: 1,
};

interface Tracked {
  id: string;
  final: boolean;
}

/** Whom a verification releases: held by the sandbox's rule, and not waiting on a claim code instead. */
function isHeld(a: Addressing): boolean {
  return a.type !== 'claim_code' && outcomeFor(a) === 'held';
}

const SUBJECTS = [
  'Monthly statement',
  'Payslip',
  'Policy renewal notice',
  'Loan agreement',
  'Account update',
  'Tax certificate',
  'Consent form',
  'Board resolution',
];
const KINDS = ['statement', 'payslip', 'notice', 'agreement', 'form'];

/**
 * Realistic, bounded, reproducible traffic against a sandbox: sends (direct and
 * queued), recipient acts, verifications of held recipients, attachments, claims,
 * seals, withdrawals and the occasional failure window. One operation at a time,
 * paced at `ratePerSecond`, so a seed gives the same sequence of decisions.
 */
export function startTraffic(options: TrafficOptions): TrafficRun {
  const seed = options.seed ?? randomSeed();
  const prng: Prng = createPrng(seed);
  const logger = options.logger ?? silentLogger();
  const rate = options.ratePerSecond ?? 20;
  if (!(rate > 0 && rate <= 100_000)) throw new RangeError('ratePerSecond: expected more than 0 and at most 100000');
  const mix = { ...DEFAULT_MIX, ...options.mix };
  const queuedShare = options.queuedShare ?? 0.3;
  const windows = options.failureWindows ?? { everyOperations: 250, durationMs: 1_500 };
  const base = options.target.url.replace(/\/+$/, '').replace(/\/sender\/v2$/, '');

  const counters: TrafficCounters = {
    seed,
    operations: 0,
    correspondences: 0,
    directSends: 0,
    queuedSends: 0,
    recipients: 0,
    acts: 0,
    verifications: 0,
    seals: 0,
    withdrawals: 0,
    attachments: 0,
    claims: 0,
    campaigns: 0,
    failureWindows: 0,
    skipped: 0,
    errors: 0,
    lastError: undefined,
    events: 0,
  };
  const live: Tracked[] = [];
  const held: Addressing[] = [];
  const claims: string[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  let startEvents: number | undefined;

  async function call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: Record<string, unknown> } | undefined> {
    try {
      const res = await request(`${base}${path}`, {
        method,
        ...(options.http ? { dispatcher: options.http } : {}),
        headers: {
          authorization: `Bearer ${options.target.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      const text = await res.body.text();
      const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (res.statusCode >= 300) {
        const err = (json.error ?? {}) as { code?: string; message?: string };
        // 409 is the sandbox refusing a move the generator raced (e.g. a file sealed meanwhile): not an error of the run.
        if (res.statusCode !== 409) {
          counters.errors++;
          counters.lastError = `${method} ${path.split('?')[0]} → ${res.statusCode} ${err.code ?? ''}`.trim();
          logger.debug({ status: res.statusCode, code: err.code, path: path.split('?')[0] }, 'traffic: request refused');
        }
        return undefined;
      }
      return { status: res.statusCode, json };
    } catch (err) {
      counters.errors++;
      counters.lastError = `${method} ${path.split('?')[0]}: ${describeError(err)}`;
      return undefined;
    }
  }

  const nin = (outcome: 'delivered' | 'held' | 'undeliverable'): string => {
    let digits = '';
    for (let i = 0; i < 10; i++) digits += String(prng.int(0, 9));
    return digits + (outcome === 'held' ? '8' : outcome === 'undeliverable' ? '9' : String(prng.int(0, 7)));
  };

  const recipient = (i: number): { addressing: Addressing; ref: string; display_name: string } => {
    const roll = prng.next();
    let addressing: Addressing;
    if (roll < 0.06) addressing = { type: 'claim_code', name: `Recipient ${counters.recipients + i}` };
    else if (roll < 0.2)
      addressing = { type: 'email', email: `person${prng.int(1, 1_000_000)}${prng.chance(0.15) ? '+held' : ''}@example.com` };
    else {
      const r = prng.next();
      addressing = { type: 'nin', nin: nin(r < 0.8 ? 'delivered' : r < 0.92 ? 'held' : 'undeliverable') };
    }
    return { addressing, ref: `cust-${prng.int(1, 9_999_999)}`, display_name: `Customer ${counters.recipients + i}` };
  };

  const uuid = (): string => {
    const hex = Array.from({ length: 32 }, () => prng.int(0, 15).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
  };

  async function send(): Promise<void> {
    const n = prng.int(1, 4);
    const recipients = Array.from({ length: n }, (_, i) => recipient(i));
    const queued = prng.chance(queuedShare);
    const res = await call(
      'POST',
      '/sender/v2/correspondence',
      { kind: prng.pick(KINDS), subject: prng.pick(SUBJECTS), content_type: 'application/pdf', document_ids: [], recipients },
      { 'idempotency-key': uuid(), 'x-sandbox-send-mode': queued ? 'queued' : 'direct' },
    );
    if (!res) return;
    counters.correspondences++;
    counters.recipients += n;
    if (res.status === 202) counters.queuedSends++;
    else counters.directSends++;
    live.push({ id: String(res.json.correspondence_id), final: false });
    await options.onCorrespondenceCreated?.(String(res.json.correspondence_id));
    for (const r of recipients) if (isHeld(r.addressing)) held.push(r.addressing);
  }

  /** A recent live file, re-read so the choice rests on the sandbox's truth. */
  /** A queued send still draining has pending participants: sealing it now would be premature. */
  const stillSending = (view: Record<string, unknown>): boolean =>
    Array.isArray(view.participants) && view.participants.some((p) => (p as { state?: unknown }).state === 'pending');

  async function pickLive(): Promise<{ tracked: Tracked; view: Record<string, unknown> } | undefined> {
    const recent = live.filter((t) => !t.final).slice(-50);
    if (recent.length === 0) return undefined;
    const tracked = prng.pick(recent);
    const res = await call('GET', `/sender/v2/correspondence/${encodeURIComponent(tracked.id)}`);
    if (!res) return undefined;
    if (res.json.status !== 'live') {
      tracked.final = true;
      return undefined;
    }
    return { tracked, view: res.json };
  }

  async function step(op: TrafficOp): Promise<void> {
    switch (op) {
      case 'send':
        return send();
      case 'act': {
        const picked = await pickLive();
        const delivered = ((picked?.view.participants ?? []) as Array<{ participant_id: string; state: string }>).filter(
          (p) => p.state === 'delivered',
        );
        if (!picked || delivered.length === 0) {
          counters.skipped++;
          return;
        }
        const p = prng.pick(delivered);
        const act = prng.pick(PARTICIPANT_ACTS);
        if (await call('POST', `/sandbox/participants/${encodeURIComponent(p.participant_id)}/act`, { act })) counters.acts++;
        return;
      }
      case 'verify': {
        const addressing = held.splice(prng.int(0, Math.max(0, held.length - 1)), 1)[0];
        if (!addressing) {
          counters.skipped++;
          return;
        }
        if (await call('POST', '/sandbox/recipients/verify', { addressing })) counters.verifications++;
        return;
      }
      case 'seal':
      case 'withdraw': {
        const picked = await pickLive();
        if (!picked || (op === 'seal' && stillSending(picked.view))) {
          counters.skipped++;
          return;
        }
        if (await call('POST', `/sandbox/correspondence/${encodeURIComponent(picked.tracked.id)}/${op}`)) {
          picked.tracked.final = true;
          if (op === 'seal') counters.seals++;
          else counters.withdrawals++;
        }
        return;
      }
      case 'attach': {
        const picked = await pickLive();
        if (!picked) {
          counters.skipped++;
          return;
        }
        const doc = await call(
          'POST',
          '/sender/v2/documents',
          {
            filename: `addendum-${counters.attachments + 1}.pdf`,
            media_type: 'application/pdf',
            content_base64: Buffer.from(`%PDF-1.4 addendum ${counters.attachments + 1}`).toString('base64'),
          },
          { 'idempotency-key': uuid() },
        );
        if (
          doc &&
          (await call('POST', `/sandbox/correspondence/${encodeURIComponent(picked.tracked.id)}/attach`, {
            document_id: doc.json.document_id,
          }))
        )
          counters.attachments++;
        return;
      }
      case 'claim': {
        if (claims.length === 0) {
          const list = await call('GET', '/sandbox/claims');
          for (const c of (list?.json.claims ?? []) as Array<{ claim_id: string; status: string }>)
            if (c.status === 'open') claims.push(c.claim_id);
        }
        const claimId = claims.splice(prng.int(0, Math.max(0, claims.length - 1)), 1)[0];
        if (!claimId) {
          counters.skipped++;
          return;
        }
        if (await call('POST', `/sandbox/claims/${encodeURIComponent(claimId)}/${prng.chance(0.8) ? 'claim' : 'expire'}`))
          counters.claims++;
        return;
      }
      case 'campaign':
        if (await call('POST', '/sandbox/campaigns/status', { status: prng.pick(['scheduled', 'running', 'completed']) }))
          counters.campaigns++;
        return;
    }
  }

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (ms <= 0 || stopped) return resolve();
      const t = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(t);
        wake = undefined;
        resolve();
      };
    });

  const eventsNow = async (): Promise<number | undefined> => {
    const stats = await call('GET', '/sandbox/stats');
    return typeof stats?.json.events === 'number' ? stats.json.events : undefined;
  };

  const loop = async (): Promise<TrafficCounters> => {
    startEvents = await eventsNow();
    const started = Date.now();
    const bounded = (): boolean =>
      (options.maxOperations !== undefined && counters.operations >= options.maxOperations) ||
      (options.maxCorrespondences !== undefined && counters.correspondences >= options.maxCorrespondences) ||
      (options.durationMs !== undefined && Date.now() - started >= options.durationMs);
    while (!stopped && !bounded()) {
      await sleep(started + (counters.operations * 1000) / rate - Date.now());
      if (stopped) break;
      counters.operations++;
      if (windows && counters.operations % windows.everyOperations === 0) {
        if (
          await call('POST', '/sandbox/faults/failure-window', {
            duration_ms: windows.durationMs,
            ...(windows.endpointId ? { endpoint_id: windows.endpointId } : {}),
          })
        )
          counters.failureWindows++;
      }
      const op = live.length === 0 ? 'send' : prng.weighted(mix);
      await step(op);
    }
    const endEvents = await eventsNow();
    if (startEvents !== undefined && endEvents !== undefined) counters.events = endEvents - startEvents;
    logger.info({ ...counters }, 'traffic finished');
    return { ...counters };
  };

  const done = loop();
  return {
    counters: () => ({ ...counters }),
    done,
    async stop() {
      stopped = true;
      wake?.();
      return done;
    },
  };
}

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

/** What the generator's operations share: the run's options, its seeded decisions, its counters and what it tracks. */
interface TrafficState {
  options: TrafficOptions;
  /** The sandbox root (no /sender/v2). */
  base: string;
  prng: Prng;
  logger: Logger;
  counters: TrafficCounters;
  queuedShare: number;
  /** Files sent, and whether they are known sealed or withdrawn. */
  live: Tracked[];
  /** Recipients held when sent, for verifications to release. */
  held: Addressing[];
  /** Open claim codes, listed from the sandbox when the list runs out. */
  claims: string[];
}

/**
 * Realistic, bounded, reproducible traffic against a sandbox: sends (direct and
 * queued), recipient acts, verifications of held recipients, attachments, claims,
 * seals, withdrawals and the occasional failure window. One operation at a time,
 * paced at `ratePerSecond`, so a seed gives the same sequence of decisions.
 */
export function startTraffic(options: TrafficOptions): TrafficRun {
  const seed = options.seed ?? randomSeed();
  const rate = options.ratePerSecond ?? 20;
  if (!(rate > 0 && rate <= 100_000)) throw new RangeError('ratePerSecond: expected more than 0 and at most 100000');
  const mix = { ...DEFAULT_MIX, ...options.mix };
  const windows = options.failureWindows ?? { everyOperations: 250, durationMs: 1_500 };
  const st: TrafficState = {
    options,
    base: options.target.url.replace(/\/+$/, '').replace(/\/sender\/v2$/, ''),
    prng: createPrng(seed),
    logger: options.logger ?? silentLogger(),
    counters: newCounters(seed),
    queuedShare: options.queuedShare ?? 0.3,
    live: [],
    held: [],
    claims: [],
  };
  const { counters } = st;
  let stopped = false;
  let wake: (() => void) | undefined;

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

  const loop = async (): Promise<TrafficCounters> => {
    const startEvents = await eventsNow(st);
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
          await call(st, 'POST', '/sandbox/faults/failure-window', {
            duration_ms: windows.durationMs,
            ...(windows.endpointId ? { endpoint_id: windows.endpointId } : {}),
          })
        )
          counters.failureWindows++;
      }
      const op = st.live.length === 0 ? 'send' : st.prng.weighted(mix);
      await STEPS[op](st);
    }
    const endEvents = await eventsNow(st);
    if (startEvents !== undefined && endEvents !== undefined) counters.events = endEvents - startEvents;
    st.logger.info({ ...counters }, 'traffic finished');
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

function newCounters(seed: number): TrafficCounters {
  return {
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
}

/** One call to the sandbox; undefined when it failed or was refused (counted as an error, except a raced 409). */
async function call(
  st: TrafficState,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> } | undefined> {
  const { counters } = st;
  try {
    const res = await request(`${st.base}${path}`, {
      method,
      ...(st.options.http ? { dispatcher: st.options.http } : {}),
      headers: {
        authorization: `Bearer ${st.options.target.apiKey}`,
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
        st.logger.debug({ status: res.statusCode, code: err.code, path: path.split('?')[0] }, 'traffic: request refused');
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

async function eventsNow(st: TrafficState): Promise<number | undefined> {
  const stats = await call(st, 'GET', '/sandbox/stats');
  return typeof stats?.json.events === 'number' ? stats.json.events : undefined;
}

function nin(prng: Prng, outcome: 'delivered' | 'held' | 'undeliverable'): string {
  let digits = '';
  for (let i = 0; i < 10; i++) digits += String(prng.int(0, 9));
  return digits + (outcome === 'held' ? '8' : outcome === 'undeliverable' ? '9' : String(prng.int(0, 7)));
}

function recipient(st: TrafficState, i: number): { addressing: Addressing; ref: string; display_name: string } {
  const { prng, counters } = st;
  const roll = prng.next();
  let addressing: Addressing;
  if (roll < 0.06) addressing = { type: 'claim_code', name: `Recipient ${counters.recipients + i}` };
  else if (roll < 0.2)
    addressing = { type: 'email', email: `person${prng.int(1, 1_000_000)}${prng.chance(0.15) ? '+held' : ''}@example.com` };
  else {
    const r = prng.next();
    addressing = { type: 'nin', nin: nin(prng, r < 0.8 ? 'delivered' : r < 0.92 ? 'held' : 'undeliverable') };
  }
  return { addressing, ref: `cust-${prng.int(1, 9_999_999)}`, display_name: `Customer ${counters.recipients + i}` };
}

function uuid(prng: Prng): string {
  const hex = Array.from({ length: 32 }, () => prng.int(0, 15).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/** A queued send still draining has pending participants: sealing it now would be premature. */
const stillSending = (view: Record<string, unknown>): boolean =>
  Array.isArray(view.participants) && view.participants.some((p) => (p as { state?: unknown }).state === 'pending');

/** A recent live file, re-read so the choice rests on the sandbox's truth. */
async function pickLive(st: TrafficState): Promise<{ tracked: Tracked; view: Record<string, unknown> } | undefined> {
  const recent = st.live.filter((t) => !t.final).slice(-50);
  if (recent.length === 0) return undefined;
  const tracked = st.prng.pick(recent);
  const res = await call(st, 'GET', `/sender/v2/correspondence/${encodeURIComponent(tracked.id)}`);
  if (!res) return undefined;
  if (res.json.status !== 'live') {
    tracked.final = true;
    return undefined;
  }
  return { tracked, view: res.json };
}

/** Each operation, as the organisation's backend, a recipient or the sandbox's control routes would make it. */
const STEPS: Record<TrafficOp, (st: TrafficState) => Promise<void>> = {
  send: sendOne,
  act: actOnce,
  verify: async (st) => {
    const addressing = st.held.splice(st.prng.int(0, Math.max(0, st.held.length - 1)), 1)[0];
    if (!addressing) {
      st.counters.skipped++;
      return;
    }
    if (await call(st, 'POST', '/sandbox/recipients/verify', { addressing })) st.counters.verifications++;
  },
  seal: (st) => finish(st, 'seal'),
  withdraw: (st) => finish(st, 'withdraw'),
  attach: attachOne,
  claim: claimOne,
  campaign: async (st) => {
    if (await call(st, 'POST', '/sandbox/campaigns/status', { status: st.prng.pick(['scheduled', 'running', 'completed']) }))
      st.counters.campaigns++;
  },
};

async function sendOne(st: TrafficState): Promise<void> {
  const { prng, counters } = st;
  const n = prng.int(1, 4);
  const recipients = Array.from({ length: n }, (_, i) => recipient(st, i));
  const queued = prng.chance(st.queuedShare);
  const res = await call(
    st,
    'POST',
    '/sender/v2/correspondence',
    { kind: prng.pick(KINDS), subject: prng.pick(SUBJECTS), content_type: 'application/pdf', document_ids: [], recipients },
    { 'idempotency-key': uuid(prng), 'x-sandbox-send-mode': queued ? 'queued' : 'direct' },
  );
  if (!res) return;
  counters.correspondences++;
  counters.recipients += n;
  if (res.status === 202) counters.queuedSends++;
  else counters.directSends++;
  st.live.push({ id: String(res.json.correspondence_id), final: false });
  await st.options.onCorrespondenceCreated?.(String(res.json.correspondence_id));
  for (const r of recipients) if (isHeld(r.addressing)) st.held.push(r.addressing);
}

async function actOnce(st: TrafficState): Promise<void> {
  const picked = await pickLive(st);
  const delivered = ((picked?.view.participants ?? []) as Array<{ participant_id: string; state: string }>).filter(
    (p) => p.state === 'delivered',
  );
  if (!picked || delivered.length === 0) {
    st.counters.skipped++;
    return;
  }
  const p = st.prng.pick(delivered);
  const act = st.prng.pick(PARTICIPANT_ACTS);
  if (await call(st, 'POST', `/sandbox/participants/${encodeURIComponent(p.participant_id)}/act`, { act })) st.counters.acts++;
}

async function finish(st: TrafficState, op: 'seal' | 'withdraw'): Promise<void> {
  const picked = await pickLive(st);
  if (!picked || (op === 'seal' && stillSending(picked.view))) {
    st.counters.skipped++;
    return;
  }
  if (await call(st, 'POST', `/sandbox/correspondence/${encodeURIComponent(picked.tracked.id)}/${op}`)) {
    picked.tracked.final = true;
    if (op === 'seal') st.counters.seals++;
    else st.counters.withdrawals++;
  }
}

async function attachOne(st: TrafficState): Promise<void> {
  const picked = await pickLive(st);
  if (!picked) {
    st.counters.skipped++;
    return;
  }
  const doc = await call(
    st,
    'POST',
    '/sender/v2/documents',
    {
      filename: `addendum-${st.counters.attachments + 1}.pdf`,
      media_type: 'application/pdf',
      content_base64: Buffer.from(`%PDF-1.4 addendum ${st.counters.attachments + 1}`).toString('base64'),
    },
    { 'idempotency-key': uuid(st.prng) },
  );
  if (
    doc &&
    (await call(st, 'POST', `/sandbox/correspondence/${encodeURIComponent(picked.tracked.id)}/attach`, {
      document_id: doc.json.document_id,
    }))
  )
    st.counters.attachments++;
}

async function claimOne(st: TrafficState): Promise<void> {
  if (st.claims.length === 0) {
    const list = await call(st, 'GET', '/sandbox/claims');
    for (const c of (list?.json.claims ?? []) as Array<{ claim_id: string; status: string }>)
      if (c.status === 'open') st.claims.push(c.claim_id);
  }
  const claimId = st.claims.splice(st.prng.int(0, Math.max(0, st.claims.length - 1)), 1)[0];
  if (!claimId) {
    st.counters.skipped++;
    return;
  }
  if (await call(st, 'POST', `/sandbox/claims/${encodeURIComponent(claimId)}/${st.prng.chance(0.8) ? 'claim' : 'expire'}`))
    st.counters.claims++;
}

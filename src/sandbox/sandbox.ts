import http from 'node:http';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_QUEUE_DELAY_MS, DEFAULT_RETRY_SCHEDULE } from './defaults.js';
import type { AddressInfo } from 'node:net';
import type express from 'express';
import { Agent, type Dispatcher as HttpDispatcher } from 'undici';
import { systemClock } from '../clock.js';
import { ConfigError, PostroomError } from '../errors.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import { VERSION } from '../version.js';
import { createActivity, createTimers } from './activity.js';
import { createSandboxApp } from './app.js';
import { createChangeLog } from './change-log.js';
import { createControl, type SandboxControl } from './control.js';
import { createCorrespondenceService } from './correspondence.js';
import { createDeliveryStore } from './deliveries.js';
import { createDispatcher } from './dispatcher.js';
import { createEndpointService } from './endpoints.js';
import { createEventLog } from './events.js';
import { createFaults, type FaultConfig } from './faults.js';
import { createIdempotencyStore } from './idempotency.js';
import { createIdFactory } from './ids.js';
import type { Scope } from './catalogue.js';
import { createKeyStore, generateKey, parseKeySpec } from './keys.js';
import { randomSeed } from './prng.js';
import { createApiRouter } from './routes/api.js';
import { createControlRouter } from './routes/control.js';
import { createWebhooksRouter } from './routes/webhooks.js';
import { createState } from './state.js';
import { createTriggers } from './trigger.js';
import { publicOnlyLookup } from './url-policy.js';
import { createWallet } from './wallet.js';

export interface SandboxOptions {
  /** API keys, as `"<key>[:<scope>,…]"` or `{ key, scopes }`; without scopes a key has them all. Default: one generated sandbox key. */
  keys?: ReadonlyArray<string | { key: string; scopes?: readonly Scope[] }>;
  /** Admit loopback/private webhook targets, and plain http to them (tests, the local demo). */
  allowPrivateTargets?: boolean;
  /** Seconds to wait before attempts 2, 3, …; fractions allowed (compressed in tests). Default [1, 5, 25, 125, 625]. */
  retrySchedule?: readonly number[];
  /** A reply slower than this is a failed attempt. Default 10 000. */
  attemptTimeoutMs?: number;
  /** Seeds every fault decision. Default: random (see `sandbox.seed`). */
  seed?: number;
  /** What the signature covers: the spec's is `body`; `timestamp.body` signs `<t>.<body>`. */
  signedPayload?: 'body' | 'timestamp.body';
  faults?: Partial<FaultConfig>;
  /** Stamps records, events and signatures (milliseconds since the epoch); waiting uses real timers. */
  clock?: { now(): number };
  logger?: Logger;
  /** HTTP dispatcher for deliveries (undici). Default: an Agent that, unless private targets are allowed, refuses to connect to non-public addresses. */
  http?: HttpDispatcher;
  /** DNS for the create-time URL check: every address a host name resolves to. */
  lookup?: (hostname: string) => Promise<Array<{ address: string; family: number }>>;
  /** Concurrent delivery attempts. Default 64. */
  maxConcurrency?: number;
  /** How long a queued (202) send takes to drain. Default 250 ms. */
  queueDelayMs?: number;
  /** Sends to more recipients than this are queued (202). Default 10. */
  queuedSendThreshold?: number;
  maxBodyBytes?: number;
  /** The live plane's wallet: opening balance and the price of one recipient (minor units). */
  wallet?: { balance?: number; currency?: string; pricePerRecipient?: number };
  organization?: { id: string; name: string };
}

export interface Sandbox {
  /** `http://host:port` once listening. */
  readonly url: string;
  /** `url` + `/sender/v2`. */
  readonly apiUrl: string;
  /** The first API key (given or generated), in clear: the sandbox itself keeps only hashes. */
  readonly apiKey: string;
  readonly apiKeys: readonly string[];
  readonly seed: number;
  readonly app: express.Express;
  readonly control: SandboxControl;
  /** Starts serving; resolves to `url`. Port 0 picks a free port. */
  listen(port?: number, host?: string): Promise<string>;
  /** Stops deliveries, timers and the server. Idempotent. */
  close(): Promise<void>;
}

export { DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_RETRY_SCHEDULE } from './defaults.js';

function checkOptions(o: SandboxOptions): void {
  const schedule = o.retrySchedule;
  if (schedule !== undefined && (schedule.length > 50 || schedule.some((s) => !Number.isFinite(s) || s < 0 || s > 86_400))) {
    throw new ConfigError('retrySchedule', 'expected at most 50 waits, each from 0 to 86400 seconds');
  }
  if (
    o.attemptTimeoutMs !== undefined &&
    (!Number.isFinite(o.attemptTimeoutMs) || o.attemptTimeoutMs < 1 || o.attemptTimeoutMs > 600_000)
  ) {
    throw new ConfigError('attemptTimeoutMs', 'expected 1 to 600000 ms');
  }
  if (o.seed !== undefined && (!Number.isInteger(o.seed) || o.seed < 0 || o.seed > 0xffff_ffff))
    throw new ConfigError('seed', 'expected a whole number from 0 to 4294967295');
}

/** The sandbox's services, wired to one another: its state, keys, deliveries, dispatcher, events and control. */
function assemble(options: SandboxOptions, clock: { now(): number }, logger: Logger, seed: number) {
  const ids = createIdFactory();
  const state = createState();
  const activity = createActivity();
  const timers = createTimers();

  const keys = createKeyStore({ clock, ids });
  const specs = (options.keys ?? []).map((k) => (typeof k === 'string' ? parseKeySpec(k, 'keys') : k));
  if (specs.length === 0) specs.push({ key: generateKey('sandbox') });
  for (const spec of specs) keys.add(spec);
  const apiKeys = specs.map((s) => s.key);

  const ownsHttp = options.http === undefined;
  const httpDispatcher =
    options.http ??
    new Agent({ connections: 128, keepAliveTimeout: 4_000, connect: options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup() } });

  const deliveries = createDeliveryStore({ clock, ids });
  const faults = createFaults({ seed, clock, ...(options.faults ? { initial: options.faults } : {}) });
  const endpoints = createEndpointService({
    state,
    clock,
    ids,
    allowPrivateTargets: options.allowPrivateTargets ?? false,
    lookup: options.lookup,
  });
  const dispatcher = createDispatcher({
    deliveries,
    endpoint: (id) => state.endpoints.get(id),
    faults,
    clock,
    logger,
    activity,
    timers,
    retryScheduleMs: (options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE).map((s) => Math.round(s * 1000)),
    attemptTimeoutMs: options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS,
    scheme: options.signedPayload ?? 'body',
    http: httpDispatcher,
    maxConcurrency: options.maxConcurrency ?? 64,
    userAgent: `postroom-sandbox/${VERSION}`,
  });
  const events = createEventLog({
    clock,
    ids,
    onEvent(event, target) {
      const targets =
        target.endpointId !== undefined
          ? [state.endpoints.get(target.endpointId)].filter((e) => e !== undefined)
          : endpoints.subscribers(event.type, event.plane);
      for (const e of targets) dispatcher.enqueue(deliveries.create({ endpointId: e.endpointId, event }));
    },
  });
  const wallet = createWallet(options.wallet ?? {}, () => events);
  const changes = createChangeLog();
  const correspondence = createCorrespondenceService({
    state,
    events,
    clock,
    ids,
    timers,
    activity,
    wallet,
    changes,
    queueDelayMs: options.queueDelayMs ?? DEFAULT_QUEUE_DELAY_MS,
  });
  const triggers = createTriggers({ state, correspondence, endpoints, events, ids, clock });
  const idempotency = createIdempotencyStore({ clock });
  const control = createControl({
    state,
    correspondence,
    endpoints,
    events,
    deliveries,
    dispatcher,
    faults,
    triggers,
    wallet,
    activity,
    ids,
    clock,
  });

  return {
    state,
    keys,
    apiKeys,
    ids,
    timers,
    ownsHttp,
    httpDispatcher,
    deliveries,
    endpoints,
    dispatcher,
    changes,
    correspondence,
    triggers,
    idempotency,
    control,
  };
}

/** An embeddable sandbox: state in memory, nothing listening until `listen()`. */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  checkOptions(options);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger();
  const seed = options.seed ?? randomSeed();
  const {
    state,
    keys,
    apiKeys,
    ids,
    timers,
    ownsHttp,
    httpDispatcher,
    deliveries,
    endpoints,
    dispatcher,
    changes,
    correspondence,
    triggers,
    idempotency,
    control,
  } = assemble(options, clock, logger, seed);

  const app = createSandboxApp({
    keys,
    logger,
    maxBodyBytes: options.maxBodyBytes ?? 16 * 1024 * 1024,
    api: [
      createApiRouter({
        state,
        keys,
        correspondence,
        changes,
        idempotency,
        ids,
        clock,
        organization: options.organization ?? { id: 'org_sandbox', name: 'Sandbox Organisation' },
        queuedSendThreshold: options.queuedSendThreshold ?? 10,
      }),
      createWebhooksRouter({ endpoints, deliveries, triggers, idempotency }),
    ],
    control: createControlRouter(control),
  });

  let server: http.Server | undefined;
  let url: string | undefined;
  let closing: Promise<void> | undefined;

  return {
    get url() {
      if (url === undefined)
        throw new PostroomError('sandbox_not_listening', 'The sandbox is not listening yet: await sandbox.listen() first.');
      return url;
    },
    get apiUrl() {
      return `${this.url}/sender/v2`;
    },
    apiKey: apiKeys[0]!,
    apiKeys,
    seed,
    app,
    control,
    async listen(port = 0, host = '127.0.0.1') {
      if (server) throw new PostroomError('sandbox_already_listening', `The sandbox already listens on ${url}.`);
      const s = await listenOn(app, port, host);
      server = s;
      const addr = s.address() as AddressInfo;
      url = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
      logger.debug({ url, seed }, 'sandbox listening');
      return url;
    },
    close() {
      closing ??= (async () => {
        timers.clearAll();
        await dispatcher.close();
        if (server) await closeServer(server);
        if (ownsHttp) await (httpDispatcher as Agent).close().catch(() => undefined);
      })();
      return closing;
    },
  };
}

async function listenOn(app: http.RequestListener, port: number, host: string): Promise<http.Server> {
  const s = http.createServer({ requestTimeout: 60_000 }, app);
  s.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      if (err.code === 'EADDRINUSE')
        reject(new ConfigError('--port', `port ${port} on ${host} is already in use; choose another with --port`, { cause: err }));
      else if (err.code === 'EACCES')
        reject(new ConfigError('--port', `not allowed to listen on port ${port}; use a port above 1023`, { cause: err }));
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') {
        reject(
          new ConfigError('--host', `cannot listen on ${host}: not an address of this machine (try 127.0.0.1 or 0.0.0.0)`, {
            cause: err,
          }),
        );
      } else reject(err);
    };
    s.once('error', onError);
    s.listen(port, host, () => {
      s.off('error', onError);
      resolve();
    });
  });
  return s;
}

function closeServer(s: http.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    s.close(() => resolve());
    s.closeIdleConnections();
    setTimeout(() => s.closeAllConnections(), 1_000).unref();
  });
}

/** createSandbox + listen, for tests and scripts. */
export async function startSandbox(options: SandboxOptions & { port?: number; host?: string } = {}): Promise<Sandbox> {
  const sandbox = createSandbox(options);
  try {
    await sandbox.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  } catch (err) {
    await sandbox.close();
    throw err;
  }
  return sandbox;
}

import path from 'node:path';
import { API_CLIENT_DEFAULTS } from '../client/defaults.js';
import { ConfigError } from '../errors.js';
import { PG_DEFAULTS } from '../db/defaults.js';
import { DEFAULT_SCHEMA, isValidSchemaName } from '../db/schema.js';
import { INGRESS_DEFAULTS } from '../ingress/defaults.js';
import { PROBE_DEFAULTS } from '../probe/defaults.js';
import { RETENTION_DEFAULTS } from '../inbox/retention-defaults.js';
import { RECONCILE_DEFAULTS } from '../reconciler/defaults.js';
import { SIGNED_PAYLOAD_SCHEMES, type SignedPayloadScheme } from '../signature/index.js';
import type { Env } from './env.js';
import { int, list, oneOf, str, url } from './parse.js';
import { loadTracingConfig, type TracingConfig } from './tracing.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const ROLES = ['all', 'ingress', 'worker', 'reconciler'] as const;
export type Role = (typeof ROLES)[number];

export interface DatabaseConfig {
  /** Postgres when set; the embedded PGlite store in `dataDir` otherwise. */
  url: string | undefined;
  dataDir: string;
  /** Connections for the ingress pool (kept small on purpose: group commit needs few). */
  poolSize: number;
  /** statement_timeout of every pooled connection; the client abandons the connection shortly after. 0: none. */
  statementTimeoutMs: number;
  /** The Postgres schema postroom's tables live in (never public: an embedder's tables may be there). */
  schema: string;
  /** The worker's statements as prepared statements, planned once per connection; off behind a pooler that drops them. */
  preparedStatements: boolean;
}

export interface IngressConfig {
  host: string;
  port: number;
  maxBodyBytes: number;
  toleranceSeconds: number;
  secrets: string[];
  signedPayload: SignedPayloadScheme;
  ackTimeoutMs: number;
  /** Server-side cap on how long one request may take to arrive (slow-drip bodies). */
  requestTimeoutMs: number;
  maxBatch: number;
}

export interface WorkerConfig {
  concurrency: number;
  maxAttempts: number;
  orderingHoldSeconds: number;
  batchSize: number;
  leaseSeconds: number;
  pollIntervalMs: number;
  handlerTimeoutMs: number;
  forwardUrl: string | undefined;
  forwardSecret: string | undefined;
  forwardTimeoutMs: number;
}

export interface ApiConfig {
  baseUrl: string | undefined;
  apiKey: string | undefined;
  apiKeyFile: string | undefined;
  correspondencePath: string;
  clientCertFile: string | undefined;
  clientKeyFile: string | undefined;
  caFile: string | undefined;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxAttempts: number;
  deadlineMs: number;
}

/** The on-call console (src/console): off unless a credential (tokens file or trusted proxy header) is configured. */
export interface ConsoleConfig {
  /** Lines `role:name:token` (role viewer or operator); read again when the file changes. */
  tokensFile: string | undefined;
  /** Served on this port; undefined: on the metrics port (POSTROOM_METRICS_PORT), or off when there is none. */
  port: number | undefined;
  /** Bound here; 127.0.0.1 unless configured. */
  host: string;
  /** Behind an authenticating proxy: the request header naming the user (only then trusted). */
  trustedUserHeader: string | undefined;
  /** Users the proxy names who may act (replay, ignore, reconcile, reveal); `*` for everyone. */
  proxyOperators: string[];
  /** Users the proxy names who may look; `*` (the default) for everyone it lets through. */
  proxyViewers: string[];
  /** Trust X-Forwarded-Proto (set by the proxy in front) to decide on Secure cookies. */
  trustForwardedProto: boolean;
  /** A session ends after this long without a request. */
  sessionIdleMs: number;
}

export interface RetentionConfig {
  /** Days of history the inbox keeps (POSTROOM_RETENTION); ids stay in the ledger for ever. */
  keepDays: number;
  /** When the leader runs retention and creates the next days' partitions (POSTROOM_RETENTION_CRON). */
  cron: string;
  /** Where each partition is archived before it is dropped (POSTROOM_ARCHIVE_DIR); none: no archive. */
  archiveDir: string | undefined;
}

export interface Config {
  nodeEnv: string;
  production: boolean;
  logLevel: LogLevel;
  database: DatabaseConfig;
  ingress: IngressConfig;
  worker: WorkerConfig;
  api: ApiConfig;
  encryptionKey: string | undefined;
  secretOverlapSeconds: number;
  reconcileCron: string;
  /** Types whose gaps stay open even when no handler consumes them. */
  reconcileConsumedTypes: string[];
  /** How far a dead delivery's time may lie from the change a re-read shows. */
  reconcileMatchWindowMs: number;
  /** The live probe on `serve`'s leader: every this many ms (0: off), each waiting up to timeoutMs; the live plane only when `live`. */
  probe: { intervalMs: number; timeoutMs: number; live: boolean };
  metricsPort: number | undefined;
  shutdownTimeoutMs: number;
  console: ConsoleConfig;
  retention: RetentionConfig;
  /** V8's old-generation growing factor for `serve`, as a percent over 1 (src/app/heap-growth.ts); 0: V8 chooses. */
  heapGrowingPercent: number;
  /** OpenTelemetry traces for `serve`, from the standard OTEL_* variables (src/config/tracing.ts). */
  tracing: TracingConfig;
}

const MiB = 1024 * 1024;

/** Parses every setting up front, so a typo fails at start with the setting's name, not at 3 a.m. */
export function loadConfig(env: Env, cwd: string = process.cwd()): Config {
  const nodeEnv = str(env, 'NODE_ENV') ?? 'development';
  const dataDir = path.resolve(cwd, str(env, 'POSTROOM_DATA_DIR') ?? '.postroom');
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']);

  const secrets = list(env, 'POSTROOM_WEBHOOK_SECRETS');
  const apiKey = str(env, 'POSTROOM_API_KEY');
  const encryptionKey = str(env, 'POSTROOM_ENCRYPTION_KEY');
  if (encryptionKey !== undefined && !/^[0-9a-fA-F]{64}$/.test(encryptionKey) && Buffer.from(encryptionKey, 'base64').length !== 32) {
    throw new ConfigError(
      'POSTROOM_ENCRYPTION_KEY',
      'expected 32 random bytes as 64 hex characters or base64 (generate one with `openssl rand -hex 32`)',
    );
  }
  const metricsPortRaw = str(env, 'POSTROOM_METRICS_PORT');
  const schema = str(env, 'POSTROOM_DB_SCHEMA') ?? DEFAULT_SCHEMA;
  if (!isValidSchemaName(schema)) {
    throw new ConfigError(
      'POSTROOM_DB_SCHEMA',
      `expected a lower-case schema name (letters, digits, _; at most 63; not public or pg_*), got "${schema.length > 40 ? `${schema.slice(0, 40)}…` : schema}"`,
    );
  }

  return {
    nodeEnv,
    production: nodeEnv === 'production',
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    database: {
      url: databaseUrl,
      dataDir,
      poolSize: int(env, 'POSTROOM_DB_POOL_SIZE', PG_DEFAULTS.poolSize, { min: 1, max: 100 }),
      statementTimeoutMs: int(env, 'POSTROOM_DB_STATEMENT_TIMEOUT_MS', PG_DEFAULTS.statementTimeoutMs, { min: 0, max: 3_600_000 }),
      schema,
      preparedStatements: oneOf(env, 'POSTROOM_DB_PREPARED_STATEMENTS', ['on', 'off'] as const, 'on') === 'on',
    },
    ingress: {
      host: str(env, 'HOST') ?? '127.0.0.1',
      port: int(env, 'PORT', 8080, { min: 0, max: 65535 }),
      maxBodyBytes: int(env, 'POSTROOM_MAX_BODY_BYTES', INGRESS_DEFAULTS.maxBodyBytes, { min: 1024, max: 64 * MiB }),
      toleranceSeconds: int(env, 'POSTROOM_SIGNATURE_TOLERANCE_SECONDS', INGRESS_DEFAULTS.toleranceSeconds, { min: 1, max: 86_400 }),
      secrets,
      signedPayload: oneOf(env, 'POSTROOM_SIGNED_PAYLOAD', SIGNED_PAYLOAD_SCHEMES, INGRESS_DEFAULTS.scheme),
      ackTimeoutMs: int(env, 'POSTROOM_ACK_TIMEOUT_MS', INGRESS_DEFAULTS.ackTimeoutMs, { min: 50, max: 60_000 }),
      requestTimeoutMs: int(env, 'POSTROOM_REQUEST_TIMEOUT_MS', 10_000, { min: 100, max: 300_000 }),
      maxBatch: int(env, 'POSTROOM_INGEST_MAX_BATCH', INGRESS_DEFAULTS.maxBatch, { min: 1, max: 5000 }),
    },
    worker: {
      concurrency: int(env, 'POSTROOM_WORKER_CONCURRENCY', 4, { min: 1, max: 256 }),
      maxAttempts: int(env, 'POSTROOM_MAX_ATTEMPTS', 10, { min: 1, max: 1000 }),
      orderingHoldSeconds: int(env, 'POSTROOM_ORDERING_HOLD_SECONDS', 300, { min: 0, max: 7 * 86_400 }),
      batchSize: int(env, 'POSTROOM_WORKER_BATCH_SIZE', 500, { min: 1, max: 5000 }),
      leaseSeconds: int(env, 'POSTROOM_WORKER_LEASE_SECONDS', 60, { min: 1, max: 86_400 }),
      pollIntervalMs: int(env, 'POSTROOM_WORKER_POLL_MS', 1000, { min: 10, max: 600_000 }),
      handlerTimeoutMs: int(env, 'POSTROOM_HANDLER_TIMEOUT_MS', 30_000, { min: 10, max: 3_600_000 }),
      forwardUrl: url(env, 'POSTROOM_FORWARD_URL', ['http:', 'https:']),
      forwardSecret: str(env, 'POSTROOM_FORWARD_SECRET'),
      forwardTimeoutMs: int(env, 'POSTROOM_FORWARD_TIMEOUT_MS', 10_000, { min: 10, max: 600_000 }),
    },
    api: {
      baseUrl: url(env, 'POSTROOM_API_BASE_URL', ['http:', 'https:']),
      apiKey,
      apiKeyFile: str(env, 'POSTROOM_API_KEY_FILE'),
      correspondencePath: str(env, 'POSTROOM_CORRESPONDENCE_PATH') ?? API_CLIENT_DEFAULTS.correspondencePath,
      clientCertFile: str(env, 'POSTROOM_API_CLIENT_CERT_FILE'),
      clientKeyFile: str(env, 'POSTROOM_API_CLIENT_KEY_FILE'),
      caFile: str(env, 'POSTROOM_API_CA_FILE'),
      connectTimeoutMs: int(env, 'POSTROOM_API_CONNECT_TIMEOUT_MS', API_CLIENT_DEFAULTS.connectTimeoutMs, { min: 10, max: 300_000 }),
      headersTimeoutMs: int(env, 'POSTROOM_API_HEADERS_TIMEOUT_MS', API_CLIENT_DEFAULTS.headersTimeoutMs, { min: 10, max: 300_000 }),
      bodyTimeoutMs: int(env, 'POSTROOM_API_BODY_TIMEOUT_MS', API_CLIENT_DEFAULTS.bodyTimeoutMs, { min: 10, max: 300_000 }),
      maxAttempts: int(env, 'POSTROOM_API_MAX_ATTEMPTS', API_CLIENT_DEFAULTS.maxAttempts, { min: 1, max: 50 }),
      deadlineMs: int(env, 'POSTROOM_API_DEADLINE_MS', API_CLIENT_DEFAULTS.deadlineMs, { min: 100, max: 3_600_000 }),
    },
    encryptionKey,
    secretOverlapSeconds: int(env, 'POSTROOM_SECRET_OVERLAP_SECONDS', 86_400, { min: 0, max: 30 * 86_400 }),
    reconcileCron: str(env, 'POSTROOM_RECONCILE_CRON') ?? '*/5 * * * *',
    reconcileConsumedTypes: list(env, 'POSTROOM_RECONCILE_CONSUMED_TYPES'),
    reconcileMatchWindowMs:
      int(env, 'POSTROOM_RECONCILE_MATCH_WINDOW_SECONDS', RECONCILE_DEFAULTS.matchWindowMs / 1000, { min: 1, max: 86_400 }) * 1000,
    probe: loadProbeConfig(env),
    metricsPort: metricsPortRaw === undefined ? undefined : int(env, 'POSTROOM_METRICS_PORT', 0, { min: 1, max: 65535 }),
    shutdownTimeoutMs: int(env, 'POSTROOM_SHUTDOWN_TIMEOUT_MS', 20_000, { min: 100, max: 600_000 }),
    heapGrowingPercent: int(env, 'POSTROOM_HEAP_GROWING_PERCENT', 100, { min: 0, max: 300 }),
    console: loadConsoleConfig(env, cwd),
    tracing: loadTracingConfig(env),
    retention: loadRetentionConfig(env, cwd),
  };
}

function loadProbeConfig(env: Env): Config['probe'] {
  const intervalSeconds = int(env, 'POSTROOM_PROBE_INTERVAL_SECONDS', 0, { min: 0, max: 86_400 });
  if (intervalSeconds > 0 && intervalSeconds * 1000 < PROBE_DEFAULTS.scheduleMinIntervalMs)
    throw new ConfigError(
      'POSTROOM_PROBE_INTERVAL_SECONDS',
      `expected 0 (no scheduled probe) or at least ${PROBE_DEFAULTS.scheduleMinIntervalMs / 1000} seconds: each probe makes the service send an event`,
    );
  return {
    intervalMs: intervalSeconds * 1000,
    timeoutMs: int(env, 'POSTROOM_PROBE_TIMEOUT_SECONDS', PROBE_DEFAULTS.timeoutMs / 1000, { min: 1, max: 600 }) * 1000,
    live: oneOf(env, 'POSTROOM_PROBE_LIVE', ['true', 'false'], 'false') === 'true',
  };
}

/** A whole number of days or weeks: `90d`, `13w`. Retention drops whole days, so nothing finer means anything. */
export function parseRetention(name: string, raw: string): number {
  const m = /^(\d{1,5})\s*([dw])$/.exec(raw.trim());
  const days = m ? Number(m[1]) * (m[2] === 'w' ? 7 : 1) : NaN;
  if (!m || days < RETENTION_DEFAULTS.minimumDays || days > 36_500) {
    throw new ConfigError(
      name,
      `expected a whole number of days or weeks from ${RETENTION_DEFAULTS.minimumDays}d (the reconciler's 7-day look-back and the day a partition spans) to 36500d, e.g. 90d or 13w; got "${raw.slice(0, 40)}"`,
    );
  }
  return days;
}

function loadRetentionConfig(env: Env, cwd: string): RetentionConfig {
  const raw = str(env, 'POSTROOM_RETENTION');
  const archiveDir = str(env, 'POSTROOM_ARCHIVE_DIR');
  return {
    keepDays: raw === undefined ? RETENTION_DEFAULTS.keepDays : parseRetention('POSTROOM_RETENTION', raw),
    cron: str(env, 'POSTROOM_RETENTION_CRON') ?? RETENTION_DEFAULTS.cron,
    archiveDir: archiveDir === undefined ? undefined : path.resolve(cwd, archiveDir),
  };
}

/** An HTTP header name as Node presents it (lower case); validated so a typo cannot name a header nobody sends. */
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

function loadConsoleConfig(env: Env, cwd: string): ConsoleConfig {
  const tokensFile = str(env, 'POSTROOM_CONSOLE_TOKENS_FILE');
  const header = str(env, 'POSTROOM_CONSOLE_TRUSTED_USER_HEADER')?.toLowerCase();
  if (header !== undefined && !HEADER_NAME.test(header)) {
    throw new ConfigError('POSTROOM_CONSOLE_TRUSTED_USER_HEADER', 'expected an HTTP header name, e.g. x-forwarded-user');
  }
  const consolePort = str(env, 'POSTROOM_CONSOLE_PORT');
  const viewers = list(env, 'POSTROOM_CONSOLE_PROXY_VIEWERS');
  return {
    tokensFile: tokensFile === undefined ? undefined : path.resolve(cwd, tokensFile),
    port: consolePort === undefined ? undefined : int(env, 'POSTROOM_CONSOLE_PORT', 0, { min: 0, max: 65535 }),
    host: str(env, 'POSTROOM_CONSOLE_HOST') ?? '127.0.0.1',
    trustedUserHeader: header,
    proxyOperators: list(env, 'POSTROOM_CONSOLE_PROXY_OPERATORS'),
    proxyViewers: viewers.length > 0 ? viewers : ['*'],
    trustForwardedProto: oneOf(env, 'POSTROOM_CONSOLE_TRUST_FORWARDED_PROTO', ['on', 'off'] as const, 'off') === 'on',
    sessionIdleMs: int(env, 'POSTROOM_CONSOLE_SESSION_IDLE_MINUTES', 60, { min: 1, max: 7 * 24 * 60 }) * 60_000,
  };
}

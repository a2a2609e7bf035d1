/**
 * The Postgres store's defaults, defined here once: createPgDb starts from these
 * and the environment (config.ts) shows and overrides them.
 */
export const PG_DEFAULTS: {
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly keepAliveInitialDelayMs: number;
  readonly statementTimeoutMs: number;
} = Object.freeze({
  /** Connections in postroom's own pool (group commit needs few). */
  poolSize: 4,
  /** Fail fast when the server is gone, so ingress can answer 503 within its ack budget. */
  connectTimeoutMs: 3000,
  /** TCP keepalive probes start after this much idleness. */
  keepAliveInitialDelayMs: 10_000,
  /** statement_timeout of every pooled connection. */
  statementTimeoutMs: 60_000,
});

import pg from 'pg';
import { PostroomError, StoreUnavailableError } from '../errors.js';
import type { Logger } from '../logging/logger.js';
import { advisoryKey } from './advisory-key.js';
import { copyIn as copyRowsIn } from './copy-in.js';
import { PG_DEFAULTS } from './defaults.js';
import { listenWithReconnect } from './pg-listen.js';
import { assertSchemaName, DEFAULT_SCHEMA, scopedLockName, searchPath } from './schema.js';
import { sqlText } from './statement.js';
import type { Db, Queryable, QueryResult, Session, Sql } from './types.js';

export interface PgDbOptions {
  /** Where to connect; or pass `pool`. */
  url?: string;
  /** Connections in postroom's own pool (ignored with `pool`). */
  poolSize?: number;
  /**
   * The application's own pool, shared rather than a second one opened. postroom sets
   * its schema in front of the search_path on each connection it checks out and puts the previous value back
   * before returning it, so the application's queries never see postroom's schema;
   * that costs two round trips per checkout. postroom never ends this pool.
   */
  pool?: pg.Pool;
  logger: Logger;
  /** Fail fast when the server is gone, so ingress can answer 503 within its ack budget (default 3 s). */
  connectTimeoutMs?: number;
  applicationName?: string;
  /**
   * Server-side statement_timeout of every pooled connection (default 60 s; 0 turns it off). The
   * client gives up on an unanswered statement a little later (query_timeout) and destroys the
   * connection, so a half-open socket (failover, frozen network) cannot hold a query for the
   * ~15 minutes the kernel takes to notice. Advisory-lock sessions (migrations) are exempt.
   */
  statementTimeoutMs?: number;
  /** TCP keepalive probes start after this much idleness (default 10 s). */
  keepAliveInitialDelayMs?: number;
  /** The schema postroom's tables live in (default `postroom`); created by `migrate`. */
  schema?: string;
  /**
   * Run named() statements as protocol-level prepared statements, planned once per
   * connection (default true; always false with the application's `pool`, whose
   * connections postroom does not own). Turn off if something between postroom and
   * Postgres drops them between two uses on one connection. (A pooler in transaction mode
   * does, but postroom needs session-level connections anyway: README, "Connection poolers".)
   */
  preparedStatements?: boolean;
}

/** The client waits this much longer than the server's own statement time-out before giving up. */
const CLIENT_GRACE_MS = 5000;
/** For sessions that may legitimately wait long (a migration, a lock): the longest setTimeout allows. */
const UNBOUNDED_MS = 2 ** 31 - 1;

/**
 * The server lacks a statement the driver prepared on this connection
 * (26000), or already has one of that name (42P05): something in between, such as a
 * pooler in transaction mode, handed the session to another server connection.
 */
function preparedStatementLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '26000' || code === '42P05';
}

function wrap(client: pg.Pool | pg.PoolClient | pg.Client, queryTimeoutMs?: number, prepare = false): Queryable {
  const config = (sql: Sql, values?: readonly unknown[]): pg.QueryConfig => ({
    text: sqlText(sql),
    ...(prepare && typeof sql !== 'string' ? { name: sql.name } : {}),
    ...(values === undefined ? {} : { values: values as unknown[] }),
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
  });
  return {
    async query<R>(sql: Sql, params?: readonly unknown[]): Promise<QueryResult<R>> {
      let res: pg.QueryResult;
      try {
        res = await client.query(config(sql, params));
      } catch (err) {
        if (prepare && typeof sql !== 'string' && preparedStatementLost(err)) {
          throw new PostroomError(
            'db_prepared_statements_unsupported',
            'Postgres lost a prepared statement between two uses on the same connection: something between postroom and ' +
              'Postgres moved the session to another server connection. A pooler in transaction mode does that, and postroom ' +
              'needs session-level connections: point DATABASE_URL at Postgres or at a pooler in session mode (README, ' +
              '"Connection poolers"). For anything else that drops them, set POSTROOM_DB_PREPARED_STATEMENTS=off.',
            { cause: err },
          );
        }
        throw err;
      }
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    },
    async exec(sql: string): Promise<void> {
      await client.query(config(sql));
    },
  };
}

/** BEGIN … COMMIT on one client; reports whether the client is still usable after a failure. */
async function inTransaction<T>(
  client: pg.PoolClient,
  fn: (tx: Queryable) => Promise<T>,
  queryTimeoutMs?: number,
  prepare = false,
): Promise<{ value: T } | { error: unknown; broken: boolean }> {
  try {
    await client.query('BEGIN');
    const value = await fn(wrap(client, queryTimeoutMs, prepare));
    await client.query('COMMIT');
    return { value };
  } catch (error) {
    try {
      await client.query('ROLLBACK');
      return { error, broken: false };
    } catch {
      return { error, broken: true };
    }
  }
}

/**
 * A pooled client loses the pool's idle 'error' listener while it is checked out;
 * if its socket drops then (network cut, Postgres restart, failover), pg emits
 * 'error' with no listener and the process dies. Listen for the whole checkout,
 * and destroy a client that was lost rather than hand it back.
 */
async function checkout(pool: pg.Pool, logger: Logger): Promise<Lease> {
  const client = await pool.connect();
  let lost = false;
  const onError = (err: Error): void => {
    lost = true;
    logger.warn({ err }, 'database connection lost while in use');
  };
  client.on('error', onError);
  return {
    client,
    release(destroy) {
      client.removeListener('error', onError);
      client.release(destroy || lost ? true : undefined);
    },
  };
}

// Read the previous value before setting: a materialised CTE is evaluated first. The
// application's path stays behind postroom's schema, so handlers reach its tables.
const SWITCH_SEARCH_PATH = `WITH previous AS MATERIALIZED (SELECT current_setting('search_path') AS value)
  SELECT value AS previous, set_config('search_path', CASE WHEN value = '' THEN $1 ELSE $1 || ', ' || value END, false) FROM previous`;

/** A checked-out connection and how to give it back (destroyed, when it may be unusable). */
type Lease = { client: pg.PoolClient; release(destroy?: boolean): void };

export function createPgDb(options: PgDbOptions): Db {
  const statementTimeoutMs = options.statementTimeoutMs ?? PG_DEFAULTS.statementTimeoutMs;
  const keepAliveInitialDelayMillis = options.keepAliveInitialDelayMs ?? PG_DEFAULTS.keepAliveInitialDelayMs;
  const connectTimeoutMs = options.connectTimeoutMs ?? PG_DEFAULTS.connectTimeoutMs;
  const schema = assertSchemaName(options.schema ?? DEFAULT_SCHEMA);
  const external = options.pool;
  const prepare = !external && (options.preparedStatements ?? true);
  if (!external && !options.url) throw new PostroomError('db_config_invalid', 'createPgDb needs a url or an existing pool');
  const pool =
    external ??
    new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? PG_DEFAULTS.poolSize,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      keepAliveInitialDelayMillis,
      application_name: options.applicationName ?? 'postroom',
      // A startup parameter rather than a SET after connecting: no extra round trip, and
      // no window in which a fresh connection could resolve a name outside the schema.
      // JIT off: postroom's statements are short, and a plan over a partitioned inbox is costed as if it read
      // every day (run-time pruning reads one), which crossed jit_above_cost and spent seconds compiling.
      options: `-c search_path=${searchPath(schema)} -c jit=off`,
      ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + CLIENT_GRACE_MS } : {}),
    });
  // An idle client dropped by the server emits here; without a listener the process would crash.
  // The application's own pool is left to the application's listeners.
  if (!external) pool.on('error', (err) => options.logger.warn({ err }, 'idle database connection lost'));

  const acquire = (): Promise<Lease> => (external ? leaseInSchema(external, schema, options.logger) : checkout(pool, options.logger));
  const base: Queryable = external ? leasedQueries(acquire) : wrap(pool, undefined, prepare);
  const listeners = new Set<pg.Client>();

  return {
    kind: 'postgres',
    schema,
    query: base.query,
    exec: base.exec,

    async copyIn(sql: string, data: Buffer): Promise<number> {
      const { client, release } = await acquire();
      try {
        return await copyRowsIn(client, sql, data);
      } finally {
        // A refused COPY leaves the connection ready for the next statement, as a failed statement does;
        // a lost one is destroyed by the checkout's own error listener.
        release();
      }
    },

    async copyInWithin(timeoutMs: number, sql: string, data: Buffer): Promise<number> {
      return boundedQuery(acquire, timeoutMs, (client) => copyRowsIn(client, sql, data));
    },

    async queryWithin<R>(timeoutMs: number, sql: Sql, params?: readonly unknown[]): Promise<QueryResult<R>> {
      // Prepared like any other named() statement: the driver keeps each connection's statements with the
      // connection, so one abandoned at the deadline (destroyed) takes them along and its replacement prepares afresh.
      return boundedQuery(acquire, timeoutMs, (client) => wrap(client, undefined, prepare).query<R>(sql, params));
    },

    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const { client, release } = await acquire();
      const result = await inTransaction(client, fn, undefined, prepare);
      // A connection whose ROLLBACK failed is in an unknown state: destroy it rather than reuse it.
      release('broken' in result && result.broken);
      if ('error' in result) throw result.error;
      return result.value;
    },

    listen(channel, onPayload) {
      // A connection of its own even with the application's pool: LISTEN holds it for good.
      const newClient = (): pg.Client =>
        new pg.Client({
          ...(external ? external.options : { connectionString: options.url }),
          connectionTimeoutMillis: connectTimeoutMs,
          keepAlive: true,
          keepAliveInitialDelayMillis,
        });
      return listenWithReconnect({ newClient, channel, onPayload, listeners, logger: options.logger });
    },

    async notify(channel, payload = '') {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },

    withAdvisoryLock(name, fn, opts = {}) {
      // Two postroom installations in one database (different schemas) must not share locks.
      return withSessionLock(acquire, advisoryKey(scopedLockName(schema, name)).toString(), statementTimeoutMs > 0, fn, opts);
    },

    async close() {
      for (const c of listeners) await c.end().catch(() => undefined);
      listeners.clear();
      if (!external) await pool.end();
    },
  };
}

/** A connection of the application's pool with postroom's schema on its search_path until it is released. */
async function leaseInSchema(external: pg.Pool, schema: string, logger: Logger): Promise<Lease> {
  const lease = await checkout(external, logger);
  let previous: string;
  try {
    previous = (await lease.client.query<{ previous: string }>(SWITCH_SEARCH_PATH, [schema])).rows[0]!.previous;
  } catch (err) {
    lease.release(true);
    throw err;
  }
  return {
    client: lease.client,
    release(destroy) {
      if (destroy) return lease.release(true);
      // Back in the pool only once the application's search_path is restored; a connection that cannot be restored is dropped.
      lease.client.query(`SELECT set_config('search_path', $1, false)`, [previous]).then(
        () => lease.release(),
        () => lease.release(true),
      );
    },
  };
}

/** Statements on the application's pool: each on a connection leased (and its search_path switched) for it. */
function leasedQueries(acquire: () => Promise<Lease>): Queryable {
  return {
    async query<R>(sql: Sql, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const { client, release } = await acquire();
      try {
        return await wrap(client).query<R>(sql, params);
      } finally {
        // Outside a transaction a failed query leaves the session usable; a lost one fails the restore and is dropped.
        release();
      }
    },
    async exec(sql: string): Promise<void> {
      await this.query(sql);
    },
  };
}

/**
 * Runs fn holding a session-level advisory lock on a connection of its own. The holder may wait for the
 * lock, or run a migration, longer than any statement time-out, so the session is exempted from it.
 */
async function withSessionLock<T>(
  acquire: () => Promise<Lease>,
  key: string,
  statementTimeout: boolean,
  fn: (session: Session) => Promise<T>,
  opts: { wait?: boolean },
): Promise<{ acquired: true; value: T } | { acquired: false }> {
  const { client, release } = await acquire();
  let held = false;
  let broken = false;
  let exempted = false;
  try {
    const long = wrap(client, UNBOUNDED_MS);
    if (statementTimeout) {
      await long.exec('SET statement_timeout = 0');
      exempted = true;
    }
    if (opts.wait === false) {
      const res = await long.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [key]);
      if (!res.rows[0]?.ok) return { acquired: false };
    } else {
      await long.query('SELECT pg_advisory_lock($1::bigint)', [key]);
    }
    held = true;
    const session: Session = {
      ...long,
      async transaction(txFn) {
        const result = await inTransaction(client, txFn, UNBOUNDED_MS);
        if ('error' in result) {
          broken ||= result.broken;
          throw result.error;
        }
        return result.value;
      },
    };
    return { acquired: true, value: await fn(session) };
  } finally {
    if (held && !broken) {
      try {
        await client.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
      } catch {
        broken = true;
      }
    }
    if (exempted && !broken) {
      // Back to the connection's default before the pool hands it to anyone else.
      await client.query('RESET statement_timeout').catch(() => {
        broken = true;
      });
    }
    // Destroying the connection also frees a session lock we could not release cleanly.
    release(broken);
  }
}

/**
 * One statement that must answer within `timeoutMs`, or is abandoned: the caller
 * gets StoreUnavailableError at the deadline, and the connection (which may be
 * half-open, or its backend stopped) is destroyed rather than handed back, so the
 * next statement runs on another one. Waiting for a free connection counts too.
 */
async function boundedQuery<T>(acquire: () => Promise<Lease>, timeoutMs: number, run: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        expired = true;
        reject(new StoreUnavailableError(`the database did not answer within ${timeoutMs} ms; connection abandoned`));
      },
      Math.max(1, timeoutMs),
    );
  });
  const checkedOut = acquire();
  let leased = false;
  try {
    const lease = await Promise.race([checkedOut, deadline]);
    leased = true;
    try {
      const res = await Promise.race([run(lease.client), deadline]);
      lease.release();
      return res;
    } catch (err) {
      // Past the deadline the statement may still be running (or stuck): never reuse that connection.
      lease.release(expired);
      throw err;
    }
  } catch (err) {
    if (expired && !leased) {
      // A connection that arrives after the deadline goes straight back.
      checkedOut.then(
        (late) => late.release(),
        () => undefined,
      );
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

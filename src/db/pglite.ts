import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PostroomError, StoreUnavailableError } from '../errors.js';
import { assertSchemaName, DEFAULT_SCHEMA, searchPath } from './schema.js';
import { sqlText } from './statement.js';
import type { Db, Queryable, QueryResult, Sql } from './types.js';

export interface PgliteDbOptions {
  /** A folder for the data, or undefined for a throw-away in-memory database (tests). */
  dataDir: string | undefined;
  /** The schema postroom's tables live in (default `postroom`). */
  schema?: string;
  /**
   * For an in-memory database only: a data folder to start from, as PGlite's `dumpDataDir()` wrote it, instead of
   * running initdb. initdb is most of the 3 to 4 s PGlite takes to open; loading its result takes about 1 s, which
   * matters to whoever opens many throw-away stores (the test suite opens hundreds).
   */
  initialData?: Blob;
}

interface PgliteLike {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
}

function wrap(target: PgliteLike): Queryable {
  return {
    // One connection, in process: nothing to gain from naming a statement.
    async query<R>(sql: Sql, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const res = await target.query<R>(sqlText(sql), params as unknown[] | undefined);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await target.exec(sql);
    },
  };
}

/**
 * PGlite has no lock of its own: two processes on one folder would corrupt it.
 * A pid lock file refuses the second one with a clear error; a lock left by a dead
 * process is taken over.
 */
function acquireFolderLock(dataDir: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, 'postroom.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => {
        try {
          if (fs.readFileSync(lockPath, 'utf8') === String(process.pid)) fs.unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processAlive(owner)) {
        throw new PostroomError(
          'embedded_store_locked',
          `The embedded database in ${dataDir} is in use by process ${owner}. The embedded store serves one process only: ` +
            'stop that process, point POSTROOM_DATA_DIR at another folder, or set DATABASE_URL to use Postgres (required for several processes).',
          { details: { dataDir, pid: owner } },
        );
      }
      fs.rmSync(lockPath, { force: true });
    }
  }
  throw new PostroomError('embedded_store_locked', `Could not lock ${lockPath}; remove it if no postroom process is running.`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function createPgliteDb(options: PgliteDbOptions): Promise<Db> {
  const schema = assertSchemaName(options.schema ?? DEFAULT_SCHEMA);
  if (options.dataDir && options.initialData) {
    throw new TypeError('initialData is for an in-memory embedded database: leave dataDir unset to use it');
  }
  const release = options.dataDir ? acquireFolderLock(options.dataDir) : () => undefined;
  let pglite: PGlite;
  try {
    // Loaded on first use: an application on Postgres never evaluates PGlite (about half of the install).
    const { PGlite } = await import('@electric-sql/pglite');
    pglite = options.dataDir
      ? await PGlite.create(path.join(options.dataDir, 'pgdata'))
      : await PGlite.create(options.initialData ? { loadDataDir: options.initialData } : {});
    // One connection for the whole process, so a session setting covers every query. The
    // store is postroom's own, so the schema is made here: raw SQL works before migrate too.
    await pglite.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}; SET search_path TO ${searchPath(schema)};`);
  } catch (err) {
    release();
    throw new PostroomError(
      'embedded_store_failed',
      `Could not open the embedded database${options.dataDir ? ` in ${options.dataDir}` : ''}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const base = wrap(pglite);
  // One connection for the whole process: advisory locks become an in-process mutex.
  const heldLocks = new Map<string, Promise<void>>();
  let closed = false;

  return {
    kind: 'pglite',
    schema,
    query: base.query,
    exec: base.exec,
    // One in-process connection: nothing to abandon, so the caller just stops waiting.
    async queryWithin<R>(timeoutMs: number, sql: Sql, params?: readonly unknown[]): Promise<QueryResult<R>> {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new StoreUnavailableError(`the embedded database did not answer within ${timeoutMs} ms`)),
          Math.max(1, timeoutMs),
        );
      });
      try {
        return await Promise.race([base.query<R>(sql, params), deadline]);
      } finally {
        clearTimeout(timer);
      }
    },
    transaction: (fn) => pglite.transaction((tx) => fn(wrap(tx))),
    async listen(channel, onPayload) {
      const unsubscribe = await pglite.listen(channel, onPayload);
      return async () => {
        if (!closed) await unsubscribe();
      };
    },
    async notify(channel, payload = '') {
      await pglite.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async withAdvisoryLock(name, fn, opts = {}) {
      while (heldLocks.has(name)) {
        if (opts.wait === false) return { acquired: false };
        await heldLocks.get(name);
      }
      let done!: () => void;
      heldLocks.set(name, new Promise<void>((r) => (done = r)));
      try {
        const session = {
          query: base.query,
          exec: base.exec,
          transaction: <R>(txFn: (tx: Queryable) => Promise<R>) => pglite.transaction((tx) => txFn(wrap(tx))),
        };
        return { acquired: true, value: await fn(session) };
      } finally {
        heldLocks.delete(name);
        done();
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await pglite.close();
      } finally {
        release();
      }
    },
  };
}

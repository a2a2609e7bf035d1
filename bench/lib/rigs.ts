/**
 * Receivers under load, as bench/cpu.ts and bench/instructions.ts start them: the minimal group commits
 * (bench/receivers/group-commit.mjs) and `postroom serve`, each on a database of its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createPgDb } from '../../src/db/pg.js';
import { silentLogger } from '../../src/logging/logger.js';
import { benchNode } from './node.js';
import { benchDatabase } from './pg.js';
import { ROOT } from './receivers.js';
import { CACHED_TOLERANCE_SECONDS } from './wrk.js';

export const SECRET = 'whsec_bench_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';

/**
 * The minimal group commit (bench/receivers/group-commit.mjs) into each table shape: the primary-key-only
 * reference, postroom's inbox, the inbox's columns with the primary key only (what its other indexes cost),
 * and a seen-id table plus an index-free intake table (the split in docs/scaling.md, at ingest).
 */
export const GROUP_COMMITS: Record<string, { mode: string; table: string; truncate: string }> = {
  gc_pk: { mode: 'pk', table: 'ref_pk', truncate: 'ref_pk' },
  gc_pk_hash: { mode: 'pk_hash', table: 'ref_pk_hash', truncate: 'ref_pk_hash' },
  gc_inbox: { mode: 'inbox', table: 'inbox', truncate: 'inbox' },
  gc_wide: { mode: 'wide', table: 'ref_wide', truncate: 'ref_wide' },
  gc_seen: { mode: 'seen_intake', table: 'ref_intake', truncate: 'ref_intake, ref_seen' },
};

/**
 * Empties what a receiver stores into before a run. Where the inbox is, so is the permanent id ledger
 * (migrations/023) of a build that has one: left full, it would answer the next run's events, which reuse the
 * same signed bodies, as duplicates, and nothing would be stored.
 */
export async function emptyStore(setup: { exec(sql: string): Promise<unknown> }, key: string): Promise<void> {
  const { truncate } = tableOf(key);
  await setup.exec(`TRUNCATE ${truncate}`);
  if (/\binbox\b/.test(truncate))
    await setup.exec(`DO $$ BEGIN IF to_regclass('inbox_ids') IS NOT NULL THEN TRUNCATE inbox_ids; END IF; END $$`);
}

/** The table a receiver stores into, and what to empty before each of its runs. */
export function tableOf(key: string): { table: string; truncate: string } {
  return GROUP_COMMITS[key] ?? { table: 'inbox', truncate: 'inbox' };
}

export interface ReceiverOptions {
  /** Every receiver's process writes a --cpu-prof profile into a folder of its own here. */
  profDir?: string | undefined;
  /** A command the receiver runs under, such as valgrind and its options; its process is the receiver's. */
  wrap?: readonly string[] | undefined;
  /** Node and V8 flags for the receiver's own command line (some, such as --predictable, NODE_OPTIONS refuses). */
  nodeFlags?: readonly string[] | undefined;
  /** How long the receiver may take to be ready (default 30 s; far longer under valgrind). */
  readyMs?: number | undefined;
}

export interface BenchDatabase {
  database: { url: string; drop(): Promise<void> };
  setup: ReturnType<typeof createPgDb>;
  admin: pg.Client;
  /** The database with postroom's schema first on the search path, for the references. */
  refUrl: string;
  /** Closes both connections and drops the database. */
  release(): Promise<void>;
}

/** The checkout a receiver key runs (`ingress@/other/root`), or undefined for this one. */
export function buildRoot(key: string): string | undefined {
  const base = key.split('+')[0]!;
  const at = base.indexOf('@');
  return at === -1 ? undefined : base.slice(at + 1);
}

/**
 * The inbox indexes a receiver key leaves out (`ingress-inbox_ordering_idx`, more joined by `-`): its receiver writes
 * into an inbox without them, which is what those indexes cost ingest, with postroom's own request path in front.
 * The worker's claim reads them, so such a schema measures ingest only.
 */
export function droppedIndexes(key: string): string[] {
  const [, ...indexes] = key.split('+')[0]!.split('@')[0]!.split('-');
  for (const index of indexes) {
    if (!/^inbox_[a-z0-9_]+$/.test(index))
      throw new Error(`${key}: "${index}" is not an inbox index name; write e.g. ingress-inbox_ordering_idx`);
  }
  return indexes;
}

/** For a bench that runs every receiver on one database, where a key that leaves indexes out would be ignored. */
export function refuseDroppedIndexes(keys: readonly string[], instead: string): void {
  const key = keys.find((k) => droppedIndexes(k).length > 0);
  if (key !== undefined) throw new Error(`${key} leaves inbox indexes out, which needs a database per receiver: ${instead}`);
}

/**
 * A database for one receiver, migrated by the migrations of the build it runs: a build that changes the
 * schema (migrations/012) is compared with one before it, each on its own schema; then without the indexes the
 * key leaves out.
 */
export async function prepareDatabase(key = ''): Promise<BenchDatabase> {
  const database = await benchDatabase();
  const setup = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
  const root = buildRoot(key);
  try {
    await migrate(setup, root === undefined ? {} : { dir: path.join(root, 'migrations') });
    for (const index of droppedIndexes(key)) {
      const found = await setup.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = $1 AND tablename = 'inbox' AND indexname = $2`,
        [setup.schema, index],
      );
      if (found.rows[0]!.n !== 1) throw new Error(`${key}: the migrated inbox has no index ${index}`);
      await setup.exec(`DROP INDEX ${setup.schema}.${index}`);
    }
  } catch (err) {
    await setup.close();
    await database.drop();
    throw err;
  }
  await setup.exec(
    `CREATE TABLE ref_pk (event_id text PRIMARY KEY, body bytea NOT NULL);
     CREATE TABLE ref_pk_hash (event_id text NOT NULL, body bytea NOT NULL, EXCLUDE USING hash (event_id WITH =));
     CREATE TABLE ref_wide (LIKE inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS, PRIMARY KEY (event_id));
     CREATE TABLE ref_seen (event_id text PRIMARY KEY);
     CREATE TABLE ref_intake (LIKE inbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
  );
  const refUrl = `${database.url}?options=${encodeURIComponent(`-c search_path=${setup.schema}`)}`;
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  const release = async (): Promise<void> => {
    await admin.end();
    await setup.close();
    await database.drop();
  };
  return { database, setup, admin, refUrl, release };
}

/** The program and arguments to spawn: node itself, or the wrapper with node as its command. */
function command(options: ReceiverOptions, nodeArgs: string[]): [string, string[]] {
  const args = [...(options.nodeFlags ?? []), ...nodeArgs];
  const { wrap } = options;
  return wrap && wrap.length > 0 ? [wrap[0]!, [...wrap.slice(1), benchNode(), ...args]] : [benchNode(), args];
}

async function startIngress(
  port: number,
  url: string,
  options: ReceiverOptions,
  root: string,
  name: string,
  nodeOptions?: string,
  role: 'ingress' | 'all' = 'ingress',
  extraEnv: Record<string, string> = {},
): Promise<ChildProcess> {
  const nodeArgs = options.profDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profDir}/${name}`] : [];
  const [program, args] = command(options, [
    ...nodeArgs,
    path.join(root, 'bin/postroom.js'),
    'serve',
    '--role',
    role,
    '--no-migrate',
    '--port',
    String(port),
  ]);
  const child = spawn(program, args, {
    cwd: root,
    env: {
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: url,
      POSTROOM_WEBHOOK_SECRETS: SECRET,
      POSTROOM_SIGNATURE_TOLERANCE_SECONDS: String(CACHED_TOLERANCE_SECONDS),
      ...extraEnv,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const readyMs = options.readyMs ?? 30_000;
  const until = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postroom exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return child;
    } catch {
      // not yet
    }
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`postroom not healthy in ${readyMs / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startGroupCommit(port: number, url: string, table: string, options: ReceiverOptions): Promise<ChildProcess> {
  const nodeArgs = options.profDir
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${options.profDir}/gc_${table}`,
        '--import',
        "data:text/javascript,process.on('SIGTERM',()=>process.exit(0))",
      ]
    : [];
  const [program, args] = command(options, [
    ...nodeArgs,
    path.join(ROOT, 'bench/receivers/group-commit.mjs'),
    String(port),
    url,
    SECRET,
    table,
  ]);
  const child = spawn(program, args, {
    env: { ...process.env, POSTROOM_SIGNATURE_TOLERANCE_SECONDS: String(CACHED_TOLERANCE_SECONDS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`group-commit.mjs exited with ${code} before it was ready`)));
  });
  return child;
}

/**
 * `…~trace=<ratio>`: the receiver exports traces over OTLP/HTTP (protobuf) to the sink at BENCH_OTLP_URL,
 * sampling that ratio of the traces it starts (parentbased_traceidratio); without it, no OTEL_* is set and
 * no SDK is loaded.
 */
export function tracingEnv(key: string): Record<string, string> {
  const m = /~trace=([0-9.]+)/.exec(key.split('+')[0]!);
  if (!m) return {};
  const sink = process.env.BENCH_OTLP_URL;
  if (!sink) throw new Error(`${key}: set BENCH_OTLP_URL to an OTLP/HTTP endpoint (bench/cpu.ts starts one)`);
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: m[1]!,
  };
}

/** `ingress` or `serve`, `…@/other/root` (another build), `…~trace=<ratio>` (tracing on), `…+--v8-flag` (NODE_OPTIONS). */
function startIngressKey(key: string, port: number, url: string, options: ReceiverOptions): Promise<ChildProcess> {
  const [base, ...opts] = key.split('+');
  const root = buildRoot(key.replace(/~trace=[0-9.]+/, '')) ?? ROOT;
  const role = base!.startsWith('serve') ? 'all' : 'ingress';
  return startIngress(port, url, options, root, key.replace(/[^A-Za-z0-9_=-]/g, '_'), opts.join(' ') || undefined, role, tracingEnv(key));
}

/** Starts the receiver a key names (a group commit, `ingress…` or `serve…`) and resolves once it takes requests. */
export function startReceiver(
  key: string,
  port: number,
  url: string,
  refUrl: string,
  options: ReceiverOptions = {},
): Promise<ChildProcess> {
  if (key.startsWith('ingress') || key.startsWith('serve')) return startIngressKey(key, port, url, options);
  const gc = GROUP_COMMITS[key];
  if (!gc) throw new Error(`unknown receiver ${key}; use ${Object.keys(GROUP_COMMITS).join(', ')}, ingress or serve`);
  return startGroupCommit(port, refUrl, gc.mode, options);
}

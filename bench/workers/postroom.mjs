// postroom's side of bench/worker.ts, in a process of its own so that it runs under the same Node as
// graphile-worker (Node 24) and from the compiled package, as `postroom serve` does. The worker as serve
// runs it: the projection on, a no-op user handler. The events are already in the inbox.
// Prints one JSON line: { node, events, seconds, participants, hot_updates, process_us, postgres_us }, the last two being
// CPU per event of this process and of its Postgres backends (from /proc: Postgres runs on this machine),
// which move less than rates between runs on a shared machine.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// BENCH_POSTROOM_BUILD: another checkout's compiled package, for before/after with this same harness.
const build = process.env.BENCH_POSTROOM_BUILD;
const { createLogger, createPgDb, createPostroom } = await import(
  build ? pathToFileURL(path.join(build, 'dist/index.js')).href : 'postroom'
);

const quiet = createLogger({ level: 'silent' });
const [url, eventsArg, concurrencyArg, targetArg] = process.argv.slice(2);
const events = Number(eventsArg);
// Finished rows to wait for: the events, plus any finished history the inbox started with.
const target = Number(targetArg ?? eventsArg);
const concurrency = Number(concurrencyArg);

const watch = createPgDb({ url, poolSize: 1, logger: quiet });
// The trigger-kept tally, not count(*): the inbox may start with a large finished history.
const processed = async () =>
  (await watch.query(`SELECT coalesce(sum(n), 0)::int AS n FROM inbox_tally WHERE status = 'processed'`)).rows[0].n;

const db = createPgDb({ url, poolSize: concurrency + 1, logger: quiet });
// The product's claim sizing (100 growing to 500 while events are quick) unless BENCH_WORKER_BATCH_SIZE caps it.
const batchSize = process.env.BENCH_WORKER_BATCH_SIZE ? { batchSize: Number(process.env.BENCH_WORKER_BATCH_SIZE) } : {};
const postroom = createPostroom({ db, logger: quiet, worker: { concurrency, pollIntervalMs: 20, ...batchSize } });
postroom.on('participant.acted', async () => undefined);

/** CPU seconds of a process on this machine, from /proc (0 once it has gone). */
const cpuSeconds = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
};
/** The worker's own backends: every connection to this database but the watcher's. */
const backendCpu = async () => {
  const { rows } = await watch.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  return rows.reduce((sum, r) => sum + cpuSeconds(r.pid), 0);
};

const started = performance.now();
const cpuBefore = process.cpuUsage();
await postroom.start();
const until = Date.now() + 600_000;
while ((await processed()) < target) {
  if (Date.now() > until) throw new Error('postroom did not drain the inbox in 600 s');
  await new Promise((r) => setTimeout(r, 50));
}
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
// The pool's backends were opened by this drain (none existed before start), so their whole CPU is the drain's.
const postgresSeconds = await backendCpu();
await postroom.stop(5000);
await db.close();
const participants = (await watch.query('SELECT count(*)::int AS n FROM participant_projection')).rows[0].n;
// The share of the projection's updates that stayed on their page (HOT: no index entries). A backend reports its
// counts when it ends, or at most a second after its last: the pool's have ended; wait for their reports to land.
await new Promise((r) => setTimeout(r, 1500));
const hot = Object.fromEntries(
  (
    await watch.query(
      `SELECT relname, round(n_tup_hot_upd::numeric / nullif(n_tup_upd, 0), 3)::float8 AS share FROM pg_stat_user_tables
       WHERE schemaname = current_schema() AND relname IN ('correspondence_projection', 'participant_projection')`,
    )
  ).rows.map((r) => [r.relname.replace('_projection', ''), r.share]),
);
await watch.close();
console.log(
  JSON.stringify({
    node: process.version,
    events,
    seconds,
    participants,
    hot_updates: hot,
    process_us: Math.round((cpu.user + cpu.system) / events),
    postgres_us: Math.round((postgresSeconds * 1e6) / events),
  }),
);

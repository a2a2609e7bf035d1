// graphile-worker's side of bench/worker.ts: the same count of no-op jobs at the same concurrency,
// under Node 24 (graphile-worker 0.18 needs Node >= 22.18, so it is not one of postroom's dependencies).
// Mode `defaults`: graphile-worker as installed, poll interval 20 ms. Mode `batched`: its documented
// batching (a local queue of 100 jobs, postroom's batch size, and completions batched per tick).
// Prints one JSON line: { node, graphile_worker, events, ran, seconds }.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Logger, run, runMigrations } from 'graphile-worker';

const [connectionString, eventsArg, concurrencyArg, mode = 'defaults'] = process.argv.slice(2);
const events = Number(eventsArg);
const concurrency = Number(concurrencyArg);
const version = JSON.parse(fs.readFileSync(new URL('./node_modules/graphile-worker/package.json', import.meta.url), 'utf8')).version;

// graphile-worker logs every job at info; errors only, so the bench's table stays readable.
const logger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(message);
});

await runMigrations({ connectionString, logger });
const watch = new pg.Client({ connectionString });
await watch.connect();
// add_jobs in slices: one add_job call per job took minutes for 50,000 (untimed, but it made the bench slow).
for (let from = 1; from <= events; from += 10_000)
  await watch.query(
    `SELECT graphile_worker.add_jobs(array_agg(('noop', json_build_object('i', g), null, null, null, null, null, null)::graphile_worker.job_spec))
       FROM generate_series($1::int, $2::int) g`,
    [from, Math.min(events, from + 9_999)],
  );
// postroom's side starts from an analysed inbox; graphile-worker's jobs get the same.
await watch.query('VACUUM ANALYZE graphile_worker._private_jobs');
// Drained means every completion committed (graphile-worker deletes a job when it completes it), read
// every 50 ms as postroom's side reads its processed rows.
const remaining = async () => (await watch.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs')).rows[0].n;

const preset = mode === 'batched' ? { worker: { localQueue: { size: 100 }, completeJobBatchDelay: 0 } } : undefined;
let ran = 0;
const started = performance.now();
const runner = await run({
  connectionString,
  concurrency,
  noHandleSignals: true,
  pollInterval: 20,
  logger,
  ...(preset ? { preset } : {}),
  taskList: {
    noop: async () => {
      ran++;
    },
  },
});
const until = Date.now() + 600_000;
while ((await remaining()) > 0) {
  if (Date.now() > until) throw new Error(`graphile-worker did not drain its jobs in 600 s (${ran} ran)`);
  await new Promise((r) => setTimeout(r, 50));
}
const seconds = (performance.now() - started) / 1000;
await runner.stop();
await watch.end();
console.log(JSON.stringify({ node: process.version, graphile_worker: version, events, ran, seconds }));

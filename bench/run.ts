/**
 * `npm run bench`: every benchmark in one run, each comparison measured side by
 * side in that same run. Results go to bench/results/*.json and the console.
 * Needs Postgres on 127.0.0.1:5432 (or DATABASE_URL as an admin URL) and wrk.
 * `npm run bench -- <name>` runs one: verify, ingest, ingress (the quick ingest comparison), tracing (what
 * tracing costs ingress, bench/tracing.ts), worker, reconcile, scale.
 */
import { benchIngest, INGRESS_COMPARISON, ingestOptionsFromEnv } from './ingest.js';
import { benchReconcile } from './reconcile.js';
import { benchScale } from './scale.js';
import { benchTracing } from './tracing.js';
import { benchVerify } from './verify.js';
import { benchWorker, workerOptionsFromEnv } from './worker.js';
import { writeResult } from './lib/report.js';

const only = process.argv[2];
const started = Date.now();
const results: Record<string, unknown> = {};
if (!only || only === 'verify') results.verify = await benchVerify();
if (!only || only === 'ingest') results.ingest = await benchIngest(ingestOptionsFromEnv());
// The quick comparison: ingress against the group-commit references, no 60 s serve (BENCH_SUSTAIN_SECONDS adds it).
if (only === 'ingress') results.ingest = await benchIngest(ingestOptionsFromEnv({ receivers: INGRESS_COMPARISON, sustainSeconds: 0 }));
// The short tracing comparison (bench/tracing.ts): no SDK, 1% and 100% sampling, and a build without tracing when given.
if (only === 'tracing') results.tracing = await benchTracing();
if (!only || only === 'worker') results.worker = await benchWorker(workerOptionsFromEnv());
if (!only || only === 'reconcile') results.reconcile = await benchReconcile();
if (!only || only === 'scale')
  results.scale = await benchScale({
    large: Number(process.env.BENCH_SCALE_ROWS ?? 10_000_000),
    rounds: Number(process.env.BENCH_SCALE_ROUNDS ?? 3),
  });
console.log(
  `\nwrote ${writeResult('all', { command: `npm run bench${only ? ` -- ${only}` : ''}`, durationS: (Date.now() - started) / 1000, ...results })}`,
);

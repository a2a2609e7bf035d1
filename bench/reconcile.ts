/**
 * Reconcile: walk N dead deliveries from the sandbox (as a separate process) with
 * `postroom reconcile` as a separate process; deliveries/s and peak RSS of the
 * reconciler, at 10k and 100k, to show memory stays flat as the count grows.
 */
import { createPgDb } from '../src/db/pg.js';
import { migrate } from '../src/db/migrate.js';
import { silentLogger } from '../src/logging/logger.js';
import { SANDBOX_KEY, cli, control, startSandbox } from './lib/cli.js';
import { benchDatabase } from './lib/pg.js';
import { sampleRss } from './lib/processes.js';
import { table, writeResult } from './lib/report.js';

export async function benchReconcile(options: { counts?: number[] } = {}): Promise<Record<string, unknown>> {
  const counts = options.counts ?? [10_000, 100_000];
  const sandbox = await startSandbox(18_900 + Math.floor(Math.random() * 500));
  const base = sandbox.base;
  const rows: Array<Record<string, string | number>> = [];
  try {
    for (const count of counts) {
      const database = await benchDatabase();
      try {
        const db = createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() });
        await migrate(db);
        await db.close();
        const ep = await control(base, 'POST', '/sandbox/endpoints', { url: 'http://127.0.0.1:9/never' });
        await control(base, 'POST', '/sandbox/seed-deliveries', {
          endpoint_id: ep.endpoint_id,
          count,
          status: 'dead',
          event_type: 'participant.acted',
        });
        const started = performance.now();
        const run = cli(['reconcile', '--endpoint', String(ep.endpoint_id), '--json'], {
          DATABASE_URL: database.url,
          POSTROOM_API_BASE_URL: base,
          POSTROOM_API_KEY: SANDBOX_KEY,
        });
        const rss = sampleRss(run.child.pid!, 50);
        await run.exited;
        const peak = rss.stop();
        const seconds = (performance.now() - started) / 1000;
        const summary = JSON.parse(run.out()) as { deliveries_scanned: number; pages: number; gaps_found: number };
        if (summary.deliveries_scanned !== count) throw new Error(`scanned ${summary.deliveries_scanned}, expected ${count}: ${run.err()}`);
        rows.push({
          'dead deliveries': count,
          pages: summary.pages,
          'gaps written': summary.gaps_found,
          seconds,
          'deliveries/s': Math.round(count / seconds),
          'peak RSS MiB': Math.round(peak),
        });
      } finally {
        await database.drop();
      }
    }
  } finally {
    await sandbox.stop();
  }
  const growth = (rows[rows.length - 1]!['peak RSS MiB'] as number) / (rows[0]!['peak RSS MiB'] as number);
  console.log(
    '\nReconcile: `postroom reconcile` walking dead deliveries from the sandbox (separate processes), page size 200, every delivery a new gap',
  );
  table(rows, ['dead deliveries', 'pages', 'gaps written', 'seconds', 'deliveries/s', 'peak RSS MiB']);
  console.log(
    `peak RSS ${counts[counts.length - 1]!.toLocaleString('en-US')} / ${counts[0]!.toLocaleString('en-US')}        ${growth.toFixed(2)}x`,
  );
  return { rows, ratios: { 'peak RSS, largest / smallest': growth } };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchReconcile();
  console.log(`\nwrote ${writeResult('reconcile', result)}`);
}

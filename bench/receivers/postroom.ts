/**
 * postroom's ingress as it runs in production (group commit, small pool), or with
 * `ceiling`: the same server verifying and parsing but not storing.
 */
import { startServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { createPgDb } from '../../src/db/pg.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';

const [port, databaseUrl, secret, mode] = process.argv.slice(2) as [string, string, string, 'store' | 'ceiling'];
const logger = silentLogger();
const config = loadConfig({ NODE_ENV: 'production', PORT: port, POSTROOM_WEBHOOK_SECRETS: secret, DATABASE_URL: databaseUrl, POSTROOM_DB_POOL_SIZE: '4' });
const real = createPgDb({ url: databaseUrl, poolSize: config.database.poolSize, logger });

// The ceiling keeps every step of the request path except the INSERT: the batch insert
// statement is answered at once as if every row were new.
const db: Db =
  mode === 'ceiling'
    ? {
        ...real,
        async query<R>(sql: string, params?: readonly unknown[]) {
          if (sql.includes('INSERT INTO inbox')) return { rows: ((params?.[0] as string[]) ?? []).map((event_id) => ({ event_id, notified: true })) as R[], rowCount: 0 };
          return real.query<R>(sql, params);
        },
      }
    : real;

const server = await startServer({ config, logger, db, role: 'ingress', migrate: false });
// A clean exit on SIGTERM, so --cpu-prof can write its profile when profiling the benchmark.
process.once('SIGTERM', () => {
  server.close().then(() => process.exit(0), () => process.exit(1));
});
process.send?.('ready');

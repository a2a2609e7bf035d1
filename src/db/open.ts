import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { createPgDb } from './pg.js';
import { createPgliteDb } from './pglite.js';
import type { Db } from './types.js';

/** Postgres when DATABASE_URL is set; otherwise the embedded development store. */
export async function openDb(config: Config, logger: Logger, options: { poolSize?: number; applicationName?: string } = {}): Promise<Db> {
  if (config.database.url) {
    return createPgDb({
      url: config.database.url,
      poolSize: options.poolSize ?? config.database.poolSize,
      statementTimeoutMs: config.database.statementTimeoutMs,
      logger,
      schema: config.database.schema,
      preparedStatements: config.database.preparedStatements,
      ...(options.applicationName ? { applicationName: options.applicationName } : {}),
    });
  }
  if (config.production) {
    logger.warn(
      { dataDir: config.database.dataDir },
      'NODE_ENV=production without DATABASE_URL: using the EMBEDDED development store, which is single-process and NOT crash-durable. Set DATABASE_URL to a Postgres database for production.',
    );
  }
  return createPgliteDb({ dataDir: config.database.dataDir, schema: config.database.schema });
}

import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import type { Db } from '../../src/db/types.js';
import { createLogger, silentLogger, type Logger } from '../../src/logging/logger.js';
import type { Clock } from '../../src/clock.js';

export const TEST_SECRET = 'whsec_test_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';

/** A real receiver on 127.0.0.1 with an ephemeral port, on the given store. */
export async function startReceiver(options: {
  db: Db;
  env?: Record<string, string>;
  logger?: Logger;
  clock?: Clock;
  role?: 'all' | 'ingress';
}): Promise<RunningServer> {
  const config = loadConfig({ NODE_ENV: 'test', PORT: '0', POSTROOM_WEBHOOK_SECRETS: TEST_SECRET, ...options.env });
  return startServer({
    config,
    logger: options.logger ?? silentLogger(),
    db: options.db,
    role: options.role ?? 'ingress',
    ...(options.clock ? { clock: options.clock } : {}),
  });
}

export { createLogger };

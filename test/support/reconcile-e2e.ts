import { startServer, type RunningServer } from '../../src/app/server.js';
import type { Postroom } from '../../src/app/postroom.js';
import { loadConfig } from '../../src/config/config.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';

/** An ingress-only receiver for a sandbox endpoint, on a fixed port so it can be stopped and started again (an outage). */
export function startEndpointReceiver(db: Db, port: number, secret: string): Promise<RunningServer> {
  return startServer({
    config: loadConfig({ NODE_ENV: 'test', PORT: String(port), POSTROOM_WEBHOOK_SECRETS: secret }),
    logger: silentLogger(),
    db,
    role: 'ingress',
    migrate: false,
  });
}

/**
 * drain() returns once nothing is left to claim, but the started worker's own loops may still hold a batch
 * they claimed first: waits until no batch is in flight and nothing is left unfinished, or 10 s.
 */
export async function settle(postroom: Postroom, db: Db): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    await postroom.drain();
    const { busy } = (
      await db.query<{ busy: number }>(
        `SELECT ((SELECT count(*) FROM inbox_attempts) + (SELECT count(*) FROM inbox WHERE status IN ('received', 'failed')))::int AS busy`,
      )
    ).rows[0]!;
    if (Number(busy) === 0 || Date.now() > until) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

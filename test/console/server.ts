import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';

/** A console served as `postroom serve --role ingress` serves it: on the admin listener, with a tokens file. */
export interface ConsoleServer {
  store: TestStore;
  server: RunningServer;
  /** The admin listener's base URL, where /console lives. */
  admin: string;
  close(): Promise<void>;
}

/** `tokens` is the tokens file's text (`role:name:token` lines). */
export async function startConsoleServer(tokens: string): Promise<ConsoleServer> {
  const store = await openDefaultTestStore();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-console-'));
  const tokensFile = path.join(dir, 'tokens');
  fs.writeFileSync(tokensFile, tokens);
  const metricsPort = await freePort();
  const server = await startServer({
    config: loadConfig({
      NODE_ENV: 'test',
      PORT: '0',
      POSTROOM_WEBHOOK_SECRETS: 'whsec_console_test_0123456789abcdef',
      POSTROOM_METRICS_PORT: String(metricsPort),
      POSTROOM_CONSOLE_TOKENS_FILE: tokensFile,
    }),
    logger: silentLogger(),
    db: store.db,
    role: 'ingress',
  });
  return {
    store,
    server,
    admin: `http://127.0.0.1:${metricsPort}`,
    async close() {
      await server.close();
      await store.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDb } from '../../src/db/open.js';
import { createLogger } from '../../src/logging/logger.js';

describe('openDb', () => {
  it('warns loudly when production runs on the embedded store', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-open-'));
    let out = '';
    const logger = createLogger({ level: 'info', destination: new Writable({ write: (c, _e, cb) => ((out += String(c)), cb()) }) });
    try {
      const db = await openDb(loadConfig({ NODE_ENV: 'production', POSTROOM_DATA_DIR: dataDir }), logger);
      expect(db.kind).toBe('pglite');
      await db.close();
      const line = JSON.parse(out.trim().split('\n')[0]!);
      expect(line.level).toBe(40);
      expect(line.msg).toMatch(/EMBEDDED development store.*NOT crash-durable.*Set DATABASE_URL/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says nothing in development', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-open-'));
    let out = '';
    const logger = createLogger({ level: 'info', destination: new Writable({ write: (c, _e, cb) => ((out += String(c)), cb()) }) });
    try {
      const db = await openDb(loadConfig({ POSTROOM_DATA_DIR: dataDir }), logger);
      await db.close();
      expect(out).toBe('');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

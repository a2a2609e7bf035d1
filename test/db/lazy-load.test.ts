import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { adminUrl, createPostgresDatabase } from '../support/db.js';

const HAS_POSTGRES = (await adminUrl()) !== undefined;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROBE = path.join(ROOT, 'test/db/fixtures/load-probe.mjs');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Runs a module body in a fresh Node process and returns every module URL it loaded. */
async function modulesLoadedBy(body: string, env: Record<string, string> = {}): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-load-'));
  dirs.push(dir);
  const out = path.join(dir, 'loaded.txt');
  const script = path.join(dir, 'main.mts');
  fs.writeFileSync(script, body);
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', PROBE, script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOAD_PROBE_OUT: out, ...env },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return fs.readFileSync(out, 'utf8').split('\n').filter(Boolean);
}

const src = (file: string): string => JSON.stringify(path.join(ROOT, 'src', file));
const pglite = (urls: string[]): string[] => urls.filter((u) => u.includes('/@electric-sql/pglite/'));
const pretty = (urls: string[]): string[] => urls.filter((u) => u.includes('/pino-pretty/'));

describe('what an embedder on Postgres loads', () => {
  it.skipIf(!HAS_POSTGRES)('importing the package and running on Postgres never evaluates PGlite or pino-pretty', async () => {
    const database = await createPostgresDatabase();
    try {
      const urls = await modulesLoadedBy(
        `import { createPgDb, createLogger, migrate } from ${src('index.ts')};
         import { openDb } from ${src('db/open.ts')};
         import { loadConfig } from ${src('config/config.ts')};
         const logger = createLogger({ level: 'silent' });
         const db = createPgDb({ url: process.env.DATABASE_URL, logger });
         await migrate(db);
         await db.close();
         const opened = await openDb(loadConfig({ DATABASE_URL: process.env.DATABASE_URL }), logger);
         await opened.query('SELECT 1');
         await opened.close();`,
        { DATABASE_URL: database.url },
      );
      expect(urls.some((u) => u.endsWith('/src/index.ts'))).toBe(true);
      expect(urls.some((u) => u.includes('/node_modules/pg/'))).toBe(true);
      expect(pglite(urls)).toEqual([]);
      expect(pretty(urls)).toEqual([]);
    } finally {
      await database.drop();
    }
  });

  it('the probe sees PGlite when the embedded store is opened', async () => {
    const urls = await modulesLoadedBy(
      `import { createPgliteDb } from ${src('index.ts')};
       const db = await createPgliteDb({ dataDir: undefined });
       await db.query('SELECT 1');
       await db.close();`,
    );
    expect(pglite(urls).length).toBeGreaterThan(0);
  });
});

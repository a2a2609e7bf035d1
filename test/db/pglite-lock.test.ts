import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgliteDb } from '../../src/db/pglite.js';
import { cliCommand, ROOT } from '../support/process.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, cliCommand(args), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('embedded store (PGlite) in a data folder', () => {
  it('keeps data across reopen, and refuses a second process on the same folder with a clear error', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-pglite-'));
    dirs.push(dataDir);
    const db = await createPgliteDb({ dataDir });
    await db.exec('CREATE TABLE kept (v int); INSERT INTO kept VALUES (42);');

    const second = await runCli(['inbox', 'list'], { POSTROOM_DATA_DIR: dataDir });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/in use by process \d+/);
    expect(second.stderr).toMatch(/DATABASE_URL/);
    expect(second.stderr).not.toMatch(/\n\s+at /);

    await db.close();
    expect(fs.existsSync(path.join(dataDir, 'postroom.lock'))).toBe(false);
    const reopened = await createPgliteDb({ dataDir });
    expect((await reopened.query<{ v: number }>('SELECT v FROM kept')).rows[0]!.v).toBe(42);
    await reopened.close();
  });

  it('takes over a lock left by a process that has exited', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-pglite-'));
    dirs.push(dataDir);
    fs.writeFileSync(path.join(dataDir, 'postroom.lock'), '999999999');
    const db = await createPgliteDb({ dataDir });
    expect(fs.readFileSync(path.join(dataDir, 'postroom.lock'), 'utf8')).toBe(String(process.pid));
    await db.close();
  });
});

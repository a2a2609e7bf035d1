import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_MIGRATIONS_DIR } from '../../src/db/migrate.js';

/**
 * A folder with the migrations an installation of an earlier release has
 * applied: those numbered below `version`. For upgrade tests; `cleanups`
 * receives its removal.
 */
export function migrationsBefore(version: number, cleanups: Array<() => Promise<void>>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `postroom-before-${version}-`));
  for (const f of fs.readdirSync(DEFAULT_MIGRATIONS_DIR))
    if (Number(f.slice(0, 3)) < version) fs.copyFileSync(path.join(DEFAULT_MIGRATIONS_DIR, f), path.join(dir, f));
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

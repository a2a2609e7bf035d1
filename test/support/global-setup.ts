import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { adminUrl } from './db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A tarball of a new PGlite data folder (see openTestStore): initdb once per run, not once per store. */
    pgliteTemplate: string;
  }
}

/**
 * Says once, up front, which store the suites run against, and runs PGlite's initdb once for the whole run: a
 * throw-away store loads its result in about 1 s instead of taking 3 to 4 s to create one, and the suites open
 * hundreds of them.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = await adminUrl();
  const where = url
    ? `Postgres at ${new URL(url).host}`
    : 'no Postgres answered: Postgres-only suites are skipped, the rest run on embedded PGlite';
  console.log(`[postroom tests] store: ${where}`);

  const { PGlite } = await import('@electric-sql/pglite');
  const fresh = await PGlite.create();
  const tarball = await fresh.dumpDataDir('none');
  await fresh.close();
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'postroom-pglite-'));
  const file = path.join(dir, 'pgdata.tar');
  await fs.writeFile(file, Buffer.from(await tarball.arrayBuffer()));
  project.provide('pgliteTemplate', file);
  return () => fs.rm(dir, { recursive: true, force: true });
}

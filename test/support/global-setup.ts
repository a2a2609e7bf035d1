import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { createPgliteDb } from '../../src/db/pglite.js';
import { adminUrl, createMigratedTemplate, dropRunDatabases } from './db.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A tarball of a new PGlite data folder (see openTestStore): initdb once per run, not once per store. */
    pgliteTemplate: string;
    /** The same folder with every migration applied: a migrated store loads it instead of migrating. */
    pgliteMigratedTemplate: string;
    /** Names this run's Postgres databases (db.ts), so that teardown drops exactly them. */
    runId: string;
    /** A Postgres database with every migration applied, which migrated test databases are cloned from; '' without Postgres. */
    pgTemplate: string;
  }
}

/**
 * Says once, up front, which store the suites run against, and prepares what every store starts from, once per run:
 * - PGlite's initdb, as a data-folder tarball, bare and with every migration applied: a throw-away store loads one
 *   in about 1 s instead of taking 3 to 4 s to create, and a migrated one skips the migrations (about 0.3 s each);
 * - on Postgres, a migrated template database that test databases are cloned from (0.3 s against 1 s to create and
 *   migrate one).
 * Test databases are dropped here at the end, all at once: each DROP DATABASE waits about a second for the server
 * whatever the database holds, and forty of them side by side take a few seconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = await adminUrl();
  const where = url
    ? `Postgres at ${new URL(url).host}`
    : 'no Postgres answered: Postgres-only suites are skipped, the rest run on embedded PGlite';
  console.log(`[postroom tests] store: ${where}`);
  const runId = randomBytes(4).toString('hex');
  project.provide('runId', runId);

  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'postroom-pglite-'));
  const { PGlite } = await import('@electric-sql/pglite');
  const fresh = await PGlite.create();
  const bare = path.join(dir, 'pgdata.tar');
  await fs.writeFile(bare, Buffer.from(await (await fresh.dumpDataDir('none')).arrayBuffer()));
  await fresh.close();
  project.provide('pgliteTemplate', bare);
  // Migrated in a folder of its own, then dumped from it as the bare one was.
  const folder = path.join(dir, 'migrated');
  const migratedDb = await createPgliteDb({ dataDir: folder });
  await migrate(migratedDb);
  await migratedDb.close();
  const reopened = await PGlite.create(path.join(folder, 'pgdata'));
  const migrated = path.join(dir, 'pgdata-migrated.tar');
  await fs.writeFile(migrated, Buffer.from(await (await reopened.dumpDataDir('none')).arrayBuffer()));
  await reopened.close();
  await fs.rm(folder, { recursive: true, force: true });
  project.provide('pgliteMigratedTemplate', migrated);

  let template = '';
  if (url) {
    template = await createMigratedTemplate(url, runId);
  }
  project.provide('pgTemplate', template);

  return async () => {
    if (url) await dropRunDatabases(url, runId);
    await fs.rm(dir, { recursive: true, force: true });
  };
}

import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { createPgliteDb } from '../../src/db/pglite.js';
import { buildCompiled, compile } from './cli-build.js';
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
    /** The folder of the CLI and test scripts compiled to JavaScript (cli-build.ts), which tests start as processes. */
    compiledDir: string;
  }
}

/**
 * Says once, up front, which store the suites run against, and prepares what every store starts from, once per run:
 * - PGlite's initdb, as a data-folder tarball, bare and with every migration applied: a throw-away store loads one
 *   in about 1 s instead of taking 3 to 4 s to create, and a migrated one skips the migrations (about 0.3 s each)
 *   (kept between runs: pgliteTemplates);
 * - on Postgres, a migrated template database that test databases are cloned from (0.3 s against 1 s to create and
 *   migrate one);
 * - the CLI and the scripts tests start as processes, compiled once (cli-build.ts).
 * Test databases are dropped here at the end, all at once: each DROP DATABASE waits about a second for the server
 * whatever the database holds, and forty of them side by side take a few seconds.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const url = await adminUrl();
  const where = url
    ? `Postgres at ${new URL(url).host}`
    : 'no Postgres answered: Postgres-only suites are skipped, the rest run on embedded PGlite';
  console.log(`[postroom tests] store: ${where}`);
  const runId = randomBytes(4).toString('hex');
  project.provide('runId', runId);

  const pglite = await pgliteTemplates();
  project.provide('pgliteTemplate', pglite.bare);
  project.provide('pgliteMigratedTemplate', pglite.migrated);

  let template = '';
  if (url) {
    template = await createMigratedTemplate(url, runId);
  }
  project.provide('pgTemplate', template);

  const compiled = await buildCompiled(ROOT, runId);
  project.provide('compiledDir', compiled);
  // In watch mode, processes started by the rerun run the code as it is now.
  project.onTestsRerun(() => compile(ROOT, compiled));

  return async () => {
    await fs.rm(compiled, { recursive: true, force: true });
    if (url) await dropRunDatabases(url, runId);
  };
}

/**
 * The two PGlite tarballs, kept between runs in node_modules/.cache under a key of PGlite's version and the
 * migrations' contents: a run of one file does not pay 10 s to make them again, and a new migration or a new
 * PGlite makes new ones.
 */
async function pgliteTemplates(): Promise<{ bare: string; migrated: string }> {
  const { PGlite } = await import('@electric-sql/pglite');
  const key = createHash('sha256');
  key.update(JSON.parse(await fs.readFile(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version);
  for (const m of readMigrations()) key.update(`${m.version}:${m.checksum}`);
  const home = path.join(ROOT, 'node_modules/.cache/postroom-tests', key.digest('hex').slice(0, 16));
  const bare = path.join(home, 'pgdata.tar');
  const migrated = path.join(home, 'pgdata-migrated.tar');
  if (existsSync(migrated)) return { bare, migrated };

  // Made beside its final place, so that the rename below stays on one file system.
  await fs.mkdir(path.dirname(home), { recursive: true });
  const dir = await fs.mkdtemp(path.join(path.dirname(home), 'making-'));
  try {
    const fresh = await PGlite.create();
    await fs.writeFile(path.join(dir, 'pgdata.tar'), Buffer.from(await (await fresh.dumpDataDir('none')).arrayBuffer()));
    await fresh.close();
    // Migrated in a folder of its own, then dumped from it as the bare one was.
    const folder = path.join(dir, 'migrated');
    const migratedDb = await createPgliteDb({ dataDir: folder });
    await migrate(migratedDb);
    await migratedDb.close();
    const reopened = await PGlite.create(path.join(folder, 'pgdata'));
    await fs.writeFile(path.join(dir, 'pgdata-migrated.tar'), Buffer.from(await (await reopened.dumpDataDir('none')).arrayBuffer()));
    await reopened.close();
    await fs.rm(folder, { recursive: true, force: true });
    // Whole or not at all: a run beside this one that got there first keeps its own.
    await fs.rename(dir, home).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
  return { bare, migrated };
}

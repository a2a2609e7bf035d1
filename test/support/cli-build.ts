import fs from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

/** The scripts tests start as processes (process.ts: nodeScript), besides src/ which they import. */
export const COMPILED_SCRIPTS: readonly string[] = [
  'test/support/cli-entry.ts',
  'test/support/heap-growth-child.ts',
  'test/worker/fixtures/worker-process.ts',
];

/**
 * The CLI and the scripts above as JavaScript, for the tests that start them as separate processes.
 *
 * Started from source through tsx, each process spent about 0.5 s of CPU more than the same code compiled: tsx
 * hooks every module load and transforms (or looks up) each of postroom's files. With CI's three Node lines
 * side by side on two cores, that CPU is time. So global-setup.ts compiles src/ once per run, file by file
 * (esbuild, as tsx does: no bundling, so lazily loaded modules stay lazy, about 0.6 s), into a folder of
 * node_modules/.cache that mirrors the repository: src/ and the scripts, with links to the
 * package.json and migrations/ that the code finds relative to itself (src/version.ts, src/db/migrate.ts).
 * The folder is the run's own, so runs side by side do not meet, and is removed at the end of the run.
 */
export async function buildCompiled(root: string, runId: string): Promise<string> {
  const dir = path.join(root, 'node_modules/.cache/postroom-tests', `cli-${runId}`);
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir, { recursive: true });
  await compile(root, dir);
  await fs.symlink(path.join(root, 'package.json'), path.join(dir, 'package.json'));
  await fs.symlink(path.join(root, 'migrations'), path.join(dir, 'migrations'));
  return dir;
}

/** Compiles src/ again into the same folder (vitest's watch mode, before each rerun). */
export async function compile(root: string, dir: string): Promise<void> {
  const sources = (await fs.readdir(path.join(root, 'src'), { recursive: true }))
    .filter((f) => f.endsWith('.ts') || f.endsWith('.tsx'))
    .map((f) => path.join(root, 'src', f));
  await build({
    entryPoints: [...sources, ...COMPILED_SCRIPTS.map((s) => path.join(root, s))],
    outdir: dir,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
  });
}

import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { COMPILED_SCRIPTS } from './cli-build.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Ports for processes a test starts: below the kernel's ephemeral range (32768-60999 on Linux), each vitest worker
 * in a band of its own. A port from `listen(0)` is ephemeral, and once closed the kernel could hand it out again
 * before the child bound it: to another test's `listen(0)` or to the local end of some client's connection. The
 * child then failed to start ("port … is already in use"), or another test's server received its requests.
 */
const BAND = 600;
const BAND_COUNT = 20;
const FIRST = 20_000;
let cursor = -1;

function tryListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  // Runs side by side on one machine (.ci/run runs two Node lines at once) start their workers' bands apart.
  const base = Number(process.env.POSTROOM_TEST_PORT_BAND ?? 0);
  const worker = (base + Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? process.pid)) % BAND_COUNT;
  if (cursor === -1) cursor = Math.floor(Math.random() * BAND);
  for (let i = 0; i < BAND; i++) {
    cursor = (cursor + 1) % BAND;
    const port = FIRST + worker * BAND + cursor;
    if (await tryListen(port)) return port;
  }
  throw new Error(`no free port in ${FIRST + worker * BAND}-${FIRST + worker * BAND + BAND - 1}`);
}

export interface CliProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Node's arguments that run `script` (a path from the repository's root) with `args`: its compiled copy
 * (cli-build.ts) in a vitest run, else the source through tsx. `nodeArgs` go to Node before the script.
 */
export function nodeScript(script: string, args: readonly string[] = [], nodeArgs: readonly string[] = []): string[] {
  let dir: string | undefined;
  try {
    dir = inject('compiledDir') || undefined;
  } catch {
    dir = undefined;
  }
  return dir && COMPILED_SCRIPTS.includes(script)
    ? [...nodeArgs, path.join(dir, script.replace(/\.ts$/, '.js')), ...args]
    : ['--import', 'tsx', ...nodeArgs, path.join(ROOT, script), ...args];
}

/** Node's arguments that start the CLI with `args`. */
export function cliCommand(args: readonly string[], nodeArgs: readonly string[] = []): string[] {
  return nodeScript('test/support/cli-entry.ts', args, nodeArgs);
}

/** Starts the CLI as a real process, with only the given environment; `nodeArgs` go to Node before the entry. */
export function spawnCli(args: string[], env: Record<string, string>, nodeArgs: readonly string[] = []): CliProcess {
  const child = spawn(process.execPath, cliCommand(args, nodeArgs), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, exited };
}

/** Polls a URL until it answers 200, or fails with the process output. */
export async function waitForHttp(url: string, proc: CliProcess, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (proc.child.exitCode !== null) throw new Error(`process exited early:\n${proc.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${url}:\n${proc.output()}`);
}

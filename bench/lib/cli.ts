import { spawn } from 'node:child_process';
import path from 'node:path';
import { request } from 'undici';
import { benchNode } from './node.js';
import { BENCH_DIR } from './report.js';

const ROOT = path.dirname(BENCH_DIR);
export const SANDBOX_KEY = 'svc_sandbox_bench0000000000000000000000000001';

/** The compiled CLI as users run it (`npm run bench` builds first), its output collected. */
export function cli(args: string[], env: Record<string, string>) {
  const child = spawn(benchNode(), [path.join(ROOT, 'bin/postroom.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, exited, out: () => out, err: () => err };
}

/** A call to the sandbox's API or control plane with the bench key. */
export async function control(base: string, method: string, p: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await request(`${base}${p}`, {
    method,
    headers: { authorization: `Bearer ${SANDBOX_KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.body.json()) as Record<string, unknown>;
  if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/** `postroom sandbox` as its own process, so its memory and CPU are not the measured command's. */
export async function startSandbox(port: number) {
  const sandbox = cli(['sandbox', '--port', String(port), '--key', SANDBOX_KEY, '--allow-private-targets', '--seed', '1'], {});
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await control(base, 'GET', '/sandbox/stats');
      break;
    } catch (err) {
      if (i >= 200) throw new Error(`the sandbox did not start: ${sandbox.err()}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    base,
    async stop(): Promise<void> {
      sandbox.child.kill('SIGTERM');
      await sandbox.exited;
    },
  };
}

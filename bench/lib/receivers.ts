import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { benchNode } from './node.js';
import { BENCH_DIR } from './report.js';

export const ROOT = path.dirname(BENCH_DIR);

/** A reference receiver (.mjs) as plain Node: no TypeScript loader between it and the measurement. */
export async function startReference(script: string, args: string[], env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(benchNode(), [path.join(BENCH_DIR, 'receivers', script), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  return child;
}

/** `postroom serve` from the compiled CLI, as users run it; ready once /healthz answers. */
export async function startPostroom(role: 'ingress' | 'all', port: number, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(benchNode(), [path.join(ROOT, 'bin/postroom.js'), 'serve', '--role', role, '--no-migrate', '--port', String(port)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postroom serve --role ${role} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error('postroom serve did not become healthy in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

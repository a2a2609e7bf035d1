import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchNodeVersion } from './node.js';

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const RESULTS_DIR = path.join(BENCH_DIR, 'results');

export function machine(): Record<string, unknown> {
  return {
    node: benchNodeVersion(),
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.release()}`,
  };
}

/** Prints an aligned table and returns it as text too. */
export function table(rows: Array<Record<string, string | number>>, columns: string[]): string {
  const fmt = (v: string | number | undefined): string =>
    typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(2)) : (v ?? '');
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => fmt(r[c]).length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const text = [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => fmt(r[c]))))].join('\n');
  console.log(text);
  return text;
}

export function writeResult(name: string, data: unknown): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(
    file,
    `${JSON.stringify({ name, at: new Date().toISOString(), machine: machine(), ...((data as object) ?? {}) }, null, 2)}\n`,
  );
  fs.writeFileSync(path.join(RESULTS_DIR, `${name}-latest.json`), fs.readFileSync(file));
  return file;
}

/** Calls fn repeatedly for `ms` after a warm-up; returns calls per second. */
export function opsPerSecond(fn: () => unknown, ms = 2000): number {
  const warm = Date.now() + 300;
  while (Date.now() < warm) fn();
  let n = 0;
  const start = process.hrtime.bigint();
  const until = start + BigInt(ms) * 1_000_000n;
  let now = start;
  while (now < until) {
    for (let i = 0; i < 100; i++) fn();
    n += 100;
    now = process.hrtime.bigint();
  }
  return n / (Number(now - start) / 1e9);
}

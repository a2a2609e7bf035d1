import type { Writable } from 'node:stream';

/** Where a command writes; injected so tests can capture output without a subprocess. */
export interface Io {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** For commands that read a list from standard input (`-`); absent in tests that give none. */
  stdin?: NodeJS.ReadableStream;
  /** True when a person is at the keyboard (progress bars, confirmations). */
  interactive: boolean;
}

export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A plain aligned table; columns sized to content, nothing fancy to break in a pager. */
export function printTable<T extends object>(io: Io, rows: readonly T[], columns: string[]): void {
  if (rows.length === 0) {
    io.stdout.write('(none)\n');
    return;
  }
  const cell = (v: unknown): string => (v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : String(v));
  const get = (r: T, c: string): unknown => (r as Record<string, unknown>)[c];
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => Math.min(cell(get(r, c)).length, 60))));
  const line = (vals: string[]): string =>
    vals
      .map((v, i) => (v.length > 60 ? `${v.slice(0, 59)}…` : v).padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  io.stdout.write(`${line(columns.map((c) => c.toUpperCase()))}\n`);
  for (const r of rows) io.stdout.write(`${line(columns.map((c) => cell(get(r, c))))}\n`);
}

/**
 * Progress on a terminal only (one rewritten line on stderr), silent in scripts,
 * so --json output on stdout stays clean.
 */
export function createProgress(io: Io, label: string): { update(text: string): void; done(text?: string): void } {
  const enabled = io.interactive && Boolean(io.stderr.isTTY);
  let last = 0;
  return {
    update(text) {
      if (!enabled) return;
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      io.stderr.write(`\r\x1b[2K${label}: ${text}`);
    },
    done(text) {
      if (!enabled) return;
      io.stderr.write(`\r\x1b[2K${text ? `${label}: ${text}\n` : ''}`);
    },
  };
}

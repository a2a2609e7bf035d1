import { PostroomError } from '../errors.js';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `90s`, `15m`, `24h`, `30d`, `2w` into milliseconds. */
export function parseDuration(flag: string, raw: string): number {
  const m = /^(\d+)\s*([smhdw])$/.exec(raw.trim());
  if (!m) throw new PostroomError('invalid_flag', `${flag}: expected a duration like 90s, 15m, 24h, 30d or 2w, got "${raw.slice(0, 40)}"`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/** The shortest of `7d`, `15m`, `90s` … that is exactly `ms` (a flag's default, shown as it would be typed). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) if (ms % UNITS[unit]! === 0) return `${ms / UNITS[unit]!}${unit}`;
  throw new RangeError(`${ms} ms is not a whole number of seconds`);
}

/** Parses a positive whole number flag with bounds and a message naming the flag. */
export function parseCount(flag: string, raw: string, bounds: { min: number; max: number }): number {
  if (!/^\d+$/.test(raw.trim()))
    throw new PostroomError(
      'invalid_flag',
      `${flag}: expected a whole number from ${bounds.min} to ${bounds.max}, got "${raw.slice(0, 40)}"`,
    );
  const n = Number(raw);
  if (n < bounds.min || n > bounds.max)
    throw new PostroomError('invalid_flag', `${flag}: expected a whole number from ${bounds.min} to ${bounds.max}, got ${n}`);
  return n;
}

export function parseChoice<T extends string>(flag: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw))
    throw new PostroomError('invalid_flag', `${flag}: expected one of ${allowed.join(' | ')}, got "${raw.slice(0, 40)}"`);
  return raw as T;
}

import { maskText } from './mask.js';

/**
 * How any value from the store is shown: always as text (the templates escape it), and faithfully. A
 * browser drops or rewrites some characters it is given (NUL, a lone carriage return, an unpaired
 * surrogate), which would make two different ids look the same; those are shown as visible stand-ins
 * instead (control pictures ␀ … ␟, ␡, and U+FFFD).
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000D\u000E-\u001F\u007F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function visible(value: unknown): string {
  if (value === null || value === undefined) return '';
  const s = value instanceof Date ? when(value) : typeof value === 'string' ? value : String(value);
  return s.replace(INVISIBLE, (ch) => {
    const code = ch.charCodeAt(0);
    if (code === 0x7f) return '\u2421';
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    return '\uFFFD';
  });
}

/** A time in UTC to the millisecond, as every view shows times. */
export function when(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '';
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) return visible(String(value));
  return d.toISOString().replace('T', ' ');
}

/** A duration in words an on-call engineer reads at a glance: 42 s, 7 min, 3 h 5 min, 2 d 4 h. */
export function ago(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export const count = (n: number): string => n.toLocaleString('en-US');

/** Free text from the store (an error, a reason, a subject): shown with NIN- and e-mail-shaped parts masked. */
export const masked = (value: unknown): string => visible(value === null || value === undefined ? '' : maskText(String(value)));

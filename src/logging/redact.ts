/**
 * Removes known secret values (an API key, a signing secret) from text and from
 * parsed values, however an encoder spelled them: a gateway that echoes the key
 * as `svc\u005fsandbox\u005f…` in JSON, or `%5F` in a URL, leaks it just the same
 * once the text is parsed or shown. Callers redact after parsing as well, since
 * parsing turns escapes back into the key.
 */

export const REDACTED = '[redacted]';

/** Values shorter than this are not treated as secrets: too likely to match ordinary text. */
const MIN_SECRET_LENGTH = 8;

const hexAlternatives = (code: number, width: number): string =>
  code
    .toString(16)
    .padStart(width, '0')
    .split('')
    .map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d))
    .join('');

/** One character as itself, a \uXXXX escape (any hex case, escaped again or not), a \xXX escape or %XX. */
function charPattern(ch: string): string {
  const code = ch.charCodeAt(0);
  const literal = ch.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  // One or more backslashes: an escape that was itself escaped again (a JSON log line of an echoed body).
  if (code > 0xff) return `(?:${literal}|\\\\+[uU]${hexAlternatives(code, 4)})`;
  const hex = hexAlternatives(code, 2);
  return `(?:${literal}|\\\\+[uU]00${hex}|\\\\+x${hex}|%${hex})`;
}

export function secretPattern(secret: string): RegExp {
  return new RegExp([...secret].map(charPattern).join(''), 'g');
}

export interface Redactor {
  text(value: string): string;
  /** A copy of a parsed value with every string (keys too) redacted. */
  deep<T>(value: T): T;
}

export function createRedactor(secrets: ReadonlyArray<string | undefined>): Redactor {
  const patterns = [...new Set(secrets.filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH))]
    // Longest first: a secret that contains another is replaced whole.
    .sort((a, b) => b.length - a.length)
    .map(secretPattern);
  const text = (value: string): string => (patterns.length === 0 ? value : patterns.reduce((s, p) => s.replace(p, REDACTED), value));
  const deep = <T>(value: T, depth = 0): T => {
    if (typeof value === 'string') return text(value) as T;
    if (value === null || typeof value !== 'object' || depth > 100) return value;
    if (Array.isArray(value)) return value.map((v) => deep(v, depth + 1)) as T;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[text(k)] = deep(v, depth + 1);
    return out as T;
  };
  return { text, deep: (v) => deep(v) };
}

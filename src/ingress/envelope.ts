import { createHash } from 'node:crypto';
import { instantMs, newInstantFields, readInstant } from '../events/calendar.js';

/**
 * Turns verified bytes into the fields the inbox needs. Never throws: anything the
 * service signed but we cannot treat as an event becomes a quarantine reason, so
 * the bytes are still kept and acknowledged.
 */
export type ParsedEnvelope =
  | {
      ok: true;
      eventId: string;
      type: string;
      at: string;
      /** `at` in milliseconds since the epoch, read with the check (for the lag histograms). */
      atMs: number;
      correspondenceId: string | null;
      /** The body as text; stored as jsonb without re-serialising. */
      json: string;
    }
  | { ok: false; reason: string; eventId: string; type: string };

export const MAX_JSON_DEPTH = 64;
const MAX_ID_LENGTH = 256;
/** Postgres numeric holds at most this many digits before / after the decimal point (with a margin). */
const MAX_NUMERIC_INT_DIGITS = 131_000;
const MAX_NUMERIC_FRACTION_DIGITS = 16_000;
const LONG_EXPONENT = /[eE][+-]?\d{4}/;
const LONG_DIGIT_RUN = new RegExp(`\\d{${MAX_NUMERIC_FRACTION_DIGITS}}`);
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Id for a body without a usable event_id: stable, so re-deliveries of it de-duplicate. */
export function quarantineId(body: Uint8Array): string {
  return `quarantine:${createHash('sha256').update(body).digest('hex')}`;
}

export function parseEnvelope(body: Uint8Array): ParsedEnvelope {
  const fail = (reason: string, eventId?: unknown, type?: unknown): ParsedEnvelope => ({
    ok: false,
    reason,
    eventId: typeof eventId === 'string' && isStorableId(eventId) ? eventId : quarantineId(body),
    type: typeof type === 'string' && isStorableId(type) ? type : 'unknown',
  });

  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return fail('body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return fail(`body is not valid JSON: ${(err as Error).message}`.slice(0, 300));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('envelope must be a JSON object');

  const problem = (mayBeUnstorable(text) ? unstorable(value) : undefined) ?? unstorableNumber(text);
  const env = value as Record<string, unknown>;
  const eventId = Object.hasOwn(env, 'event_id') ? env.event_id : undefined;
  const type = Object.hasOwn(env, 'type') ? env.type : undefined;
  if (problem) return fail(problem, eventId, type);
  if (typeof eventId !== 'string' || eventId === '') return fail('envelope: event_id must be a non-empty string');
  if (!isStorableId(eventId)) return fail(`envelope: event_id must be at most ${MAX_ID_LENGTH} printable characters`);
  if (typeof type !== 'string' || type === '') return fail('envelope: type must be a non-empty string', eventId);
  if (!isStorableId(type)) return fail(`envelope: type must be at most ${MAX_ID_LENGTH} printable characters`, eventId);
  const at = Object.hasOwn(env, 'at') ? env.at : undefined;
  if (typeof at !== 'string' || !isStorableTimestamp(at)) {
    return fail(
      'envelope: at must be an ISO 8601 timestamp of a real instant (Postgres refuses impossible dates such as February 30)',
      eventId,
      type,
    );
  }
  const data = Object.hasOwn(env, 'data') ? env.data : undefined;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return fail('envelope: data must be an object', eventId, type);
  const cid = Object.hasOwn(data, 'correspondence_id') ? (data as Record<string, unknown>).correspondence_id : undefined;
  return {
    ok: true,
    eventId,
    type,
    at,
    // isStorableTimestamp filled `fields` with this `at` just above.
    atMs: instantMs(fields),
    correspondenceId: typeof cid === 'string' && isStorableId(cid) ? cid : null,
    json: text,
  };
}

function isStorableId(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return s.length > 0 && s.length <= MAX_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(s);
}

/**
 * Whether the walk in unstorable() could find anything, decided from the text
 * alone. The text is valid JSON decoded from strict UTF-8, so a string or key can
 * hold U+0000 or a lone surrogate only through a \u escape; and nesting deeper
 * than MAX_JSON_DEPTH needs more than that many brackets. Most bodies have
 * neither, and skip a walk that cost more than JSON.parse itself.
 */
function mayBeUnstorable(text: string): boolean {
  if (text.includes('\\u')) return true;
  // indexOf jumps from bracket to bracket natively; a body holds a few, against a thousand characters.
  let brackets = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++brackets > MAX_JSON_DEPTH) return true;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++brackets > MAX_JSON_DEPTH) return true;
  return false;
}

/**
 * Postgres jsonb cannot hold U+0000, and very deep nesting only serves to exhaust
 * stacks downstream. Walks iteratively so a hostile body cannot overflow ours.
 */
function unstorable(root: unknown): string | undefined {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: root, depth: 1 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return 'payload contains U+0000, which Postgres jsonb cannot store';
      if (LONE_SURROGATE.test(v)) return 'payload contains a lone UTF-16 surrogate escape, which Postgres jsonb cannot store';
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_JSON_DEPTH) return `payload nests deeper than ${MAX_JSON_DEPTH} levels`;
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 });
    } else {
      for (const key of Object.keys(v)) {
        if (key.includes('\u0000')) return 'payload contains U+0000, which Postgres jsonb cannot store';
        if (LONE_SURROGATE.test(key)) return 'payload contains a lone UTF-16 surrogate escape, which Postgres jsonb cannot store';
        stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1 });
      }
    }
  }
  return undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const fields = newInstantFields();

/**
 * Whether `at` is `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)` naming an instant
 * timestamptz stores: the answer must say what the store will hold (readInstant).
 */
export function isStorableTimestamp(at: string): boolean {
  return readInstant(at, fields);
}

/**
 * JSON numbers JavaScript parses (to Infinity or 0) but Postgres numeric cannot
 * hold: too many digits before or after the decimal point. Scans the number
 * tokens of the text (already known to be valid JSON), skipping strings.
 */
function unstorableNumber(text: string): string | undefined {
  // The common body has neither a long exponent nor a huge digit run: skip the scan. A run of 16,000 digits needs
  // that much text: asked of every body, \d{16000} cost more than the exponent check, and allocated on each call.
  if (!LONG_EXPONENT.test(text) && (text.length < MAX_NUMERIC_FRACTION_DIGITS || !LONG_DIGIT_RUN.test(text))) return undefined;
  const token = /"(?:[^"\\]|\\.)*"|-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/g;
  for (let m = token.exec(text); m !== null; m = token.exec(text)) {
    if (m[1] === undefined) continue;
    const intDigits = m[1].replace(/^0+/, '').length;
    const fracDigits = m[2]?.length ?? 0;
    const exp = m[3] === undefined ? 0 : Number(m[3]);
    if (intDigits + exp > MAX_NUMERIC_INT_DIGITS || fracDigits - exp > MAX_NUMERIC_FRACTION_DIGITS) {
      return 'payload contains a number Postgres numeric cannot hold';
    }
  }
  return undefined;
}

import { createHash } from 'node:crypto';

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
      correspondenceId: string | null;
      /** The body as text; stored as jsonb without re-serialising. */
      json: string;
    }
  | { ok: false; reason: string; eventId: string; type: string };

export const MAX_JSON_DEPTH = 64;
const MAX_ID_LENGTH = 256;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
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

  const problem = unstorable(value);
  const env = value as Record<string, unknown>;
  const eventId = Object.hasOwn(env, 'event_id') ? env.event_id : undefined;
  const type = Object.hasOwn(env, 'type') ? env.type : undefined;
  if (problem) return fail(problem, eventId, type);
  if (typeof eventId !== 'string' || eventId === '') return fail('envelope: event_id must be a non-empty string');
  if (!isStorableId(eventId)) return fail(`envelope: event_id must be at most ${MAX_ID_LENGTH} printable characters`);
  if (typeof type !== 'string' || type === '') return fail('envelope: type must be a non-empty string', eventId);
  if (!isStorableId(type)) return fail(`envelope: type must be at most ${MAX_ID_LENGTH} printable characters`, eventId);
  const at = Object.hasOwn(env, 'at') ? env.at : undefined;
  if (typeof at !== 'string' || !ISO_UTC.test(at) || Number.isNaN(Date.parse(at))) {
    return fail('envelope: at must be an ISO 8601 timestamp', eventId, type);
  }
  const data = Object.hasOwn(env, 'data') ? env.data : undefined;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return fail('envelope: data must be an object', eventId, type);
  const cid = Object.hasOwn(data, 'correspondence_id') ? (data as Record<string, unknown>).correspondence_id : undefined;
  return {
    ok: true,
    eventId,
    type,
    at,
    correspondenceId: typeof cid === 'string' && isStorableId(cid) ? cid : null,
    json: text,
  };
}

function isStorableId(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return s.length > 0 && s.length <= MAX_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(s);
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
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_JSON_DEPTH) return `payload nests deeper than ${MAX_JSON_DEPTH} levels`;
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 });
    } else {
      for (const key of Object.keys(v)) {
        if (key.includes('\u0000')) return 'payload contains U+0000, which Postgres jsonb cannot store';
        stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1 });
      }
    }
  }
  return undefined;
}

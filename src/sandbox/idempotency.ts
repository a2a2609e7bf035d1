import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { SandboxApiError, apiErrors } from './errors.js';

export interface StoredResponse {
  status: number;
  body: unknown;
}

export interface IdempotencyStore {
  /**
   * Runs `fn` once per (scope, key); later calls with the same key and the same
   * request (compared as parsed JSON) get the stored response. The caller puts the
   * plane and the operation in `scope`. Only successes are stored: a refused request
   * can be corrected and retried under the same key.
   */
  run(
    scope: string,
    key: string,
    request: unknown,
    fn: () => Promise<StoredResponse>,
  ): Promise<{ response: StoredResponse; replayed: boolean }>;
}

interface Entry {
  fingerprint: string;
  createdAt: number;
  result: Promise<StoredResponse>;
}

/** Printable ASCII, as a header carries it; the spec says UUID in shape, any unique string is accepted. */
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

export function validateIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (Array.isArray(raw) || !KEY_SHAPE.test(raw))
    throw apiErrors.invalid('Idempotency-Key', 'one header of 1 to 255 printable characters (a UUID is best)');
  return raw;
}

/**
 * JSON text with every object's keys sorted, so two bodies that parse to the same value
 * (keys in another order, other whitespace) have the same fingerprint. Array order counts.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function createIdempotencyStore(deps: { clock: Clock; ttlMs?: number; maxEntries?: number }): IdempotencyStore {
  const ttlMs = deps.ttlMs ?? 24 * 3_600_000;
  const maxEntries = deps.maxEntries ?? 50_000;
  const entries = new Map<string, Entry>();

  const evict = (now: number): void => {
    // Insertion order is age order, so the oldest are first.
    for (const [k, e] of entries) {
      if (entries.size <= maxEntries && now - e.createdAt < ttlMs) break;
      entries.delete(k);
    }
  };

  return {
    async run(scope, key, request, fn) {
      const now = deps.clock.now();
      evict(now);
      const id = `${scope}\u0000${key}`;
      const fingerprint = createHash('sha256')
        .update(canonicalJson(request ?? null))
        .digest('hex');
      const existing = entries.get(id);
      if (existing) {
        if (existing.fingerprint !== fingerprint) {
          throw new SandboxApiError(
            422,
            'idempotency_key_reused',
            'This Idempotency-Key was already used for this operation with a different request body; use a new key for a new request.',
          );
        }
        // Concurrent duplicates wait for the first; none runs the operation twice.
        return { response: await existing.result, replayed: true };
      }
      const result = fn();
      entries.set(id, { fingerprint, createdAt: now, result });
      try {
        return { response: await result, replayed: false };
      } catch (err) {
        entries.delete(id);
        throw err;
      }
    },
  };
}

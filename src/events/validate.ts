import { z } from 'zod';
import { EVENT_CATALOGUE, isKnownEventType, type AnyKnownEvent, type UnknownEvent } from './catalogue.js';

export type ValidatedEvent =
  { kind: 'known'; event: AnyKnownEvent } | { kind: 'unknown'; event: UnknownEvent } | { kind: 'invalid'; reason: string };

const MAX_REASON = 1000;

/**
 * Checks a stored payload against the envelope and the catalogue. Ingress has
 * already parsed the envelope of webhook rows, but rows written by the
 * reconciler or changed by a replay come here too, so the envelope is checked
 * again (cheaply) before the per-type `data`.
 */
export function validateEvent(row: { event_id: string; type: string; payload: unknown }): ValidatedEvent {
  const p = row.payload;
  if (p === null || p === undefined) return { kind: 'invalid', reason: 'no payload (never parsed, or pruned)' };
  if (typeof p !== 'object' || Array.isArray(p)) return { kind: 'invalid', reason: 'envelope must be a JSON object' };
  const env = p as Record<string, unknown>;
  if (env.event_id !== row.event_id) return { kind: 'invalid', reason: 'envelope event_id differs from the stored event id' };
  if (env.type !== row.type) return { kind: 'invalid', reason: 'envelope type differs from the stored type' };
  if (typeof env.at !== 'string' || Number.isNaN(Date.parse(env.at)))
    return { kind: 'invalid', reason: 'envelope: at must be an ISO 8601 timestamp' };
  const data = env.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { kind: 'invalid', reason: 'envelope: data must be an object' };

  if (!isKnownEventType(row.type)) {
    return { kind: 'unknown', event: { event_id: row.event_id, type: row.type, at: env.at, data: data as Record<string, unknown> } };
  }
  const parsed = EVENT_CATALOGUE[row.type].safeParse(data);
  if (!parsed.success) {
    return {
      kind: 'invalid',
      reason: `${row.type} data does not match the catalogue: ${z.prettifyError(parsed.error).replace(/\s*\n\s*/g, ' ')}`.slice(
        0,
        MAX_REASON,
      ),
    };
  }
  return { kind: 'known', event: { event_id: row.event_id, type: row.type, at: env.at, data: parsed.data } as AnyKnownEvent };
}

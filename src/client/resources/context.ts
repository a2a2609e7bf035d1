import { PostroomError } from '../../errors.js';
import type { Transport } from '../http.js';

export interface ResourceContext {
  transport: Transport;
  /** A fresh Idempotency-Key; called once per logical call, so every retry of it carries the same one. */
  newIdempotencyKey(): string;
  /** Template with `{id}`, relative to /sender/v2. */
  correspondencePath: string;
  /** Told of every correspondence created, before create() returns (the reconciler's sent ledger). */
  onCorrespondenceCreated?: ((created: { correspondence_id: string }) => void | Promise<void>) | undefined;
}

/** One path segment from a caller-supplied id: never empty, never able to climb out of its path. */
export function segment(name: string, id: string): string {
  if (typeof id !== 'string' || id.trim() === '') throw new PostroomError('invalid_argument', `${name} must be a non-empty string`);
  return encodeURIComponent(id);
}

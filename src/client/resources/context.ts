import { PostroomError } from '../../errors.js';
import type { Logger } from '../../logging/logger.js';
import type { Transport } from '../http.js';

export interface ResourceContext {
  transport: Transport;
  /** A fresh Idempotency-Key; called once per logical call, so every retry of it carries the same one. */
  newIdempotencyKey(): string;
  /** Template with `{id}`, relative to /sender/v2. */
  correspondencePath: string;
  /** Told of every correspondence created, before create() returns (the reconciler's sent ledger). */
  onCorrespondenceCreated?: ((created: { correspondence_id: string }) => void | Promise<void>) | undefined;
  logger: Logger;
  /** Waits between ledger attempts (injected so tests do not wait). */
  sleep: (ms: number) => Promise<void>;
}

const LEDGER_ATTEMPTS = 3;

/**
 * Tells the sent ledger of correspondence the service has accepted. The send has
 * happened: a failure here must never reach the caller as an error, or it would
 * send again. So: a few tries, then an error log naming the ids (the reconciler's
 * listing still finds them; `postroom sent record` records them by hand).
 */
export async function notifyCreated(ctx: ResourceContext, ids: readonly string[]): Promise<void> {
  const hook = ctx.onCorrespondenceCreated;
  if (!hook) return;
  for (const id of ids) {
    for (let attempt = 1; ; attempt++) {
      try {
        await hook({ correspondence_id: id });
        break;
      } catch (err) {
        if (attempt >= LEDGER_ATTEMPTS) {
          ctx.logger.error(
            { err, correspondence_id: id, attempts: attempt },
            'could not record a sent correspondence in the ledger; the send succeeded. Record it with `postroom sent record <id>`',
          );
          break;
        }
        await ctx.sleep(100 * 2 ** (attempt - 1));
      }
    }
  }
}

/** One path segment from a caller-supplied id: never empty, never able to climb out of its path. */
export function segment(name: string, id: string): string {
  if (typeof id !== 'string' || id.trim() === '') throw new PostroomError('invalid_argument', `${name} must be a non-empty string`);
  return encodeURIComponent(id);
}

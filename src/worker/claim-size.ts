/**
 * How many events a worker loop's next claim asks for.
 *
 * Every claim walks the front of the claim order, which under steady load is
 * mostly the index entries of events finished a moment ago (dead to the claim,
 * not yet removable), and every batch pays a few statements whatever its size.
 * So fewer, larger claims pay for it less often: with claims of up to 500, `serve`
 * keeps up with about 1.2 times the ingest it does with claims of 100 (the `serve`
 * run of `npm run bench -- ingest`).
 *
 * A large claim only pays when its events are quick, though. Events whose
 * handlers wait on something (an API, a slow service) run one after another
 * inside their batch, so the loops' parallelism is what carries them, and one
 * loop holding the whole backlog would take that away. So a loop starts at
 * BASE_CLAIM_SIZE (or the configured maximum, if lower), doubles its claim
 * after a full batch whose events took at most QUICK_EVENT_MS each, up to
 * the configured maximum, and drops back to the start after any batch whose
 * events were slower than that. A grown batch whose events turn slow gives
 * back its events past BASE_CLAIM_SIZE instead of running them (process-batch.ts),
 * so it never runs more slow events in a row than a claim of the base size.
 */
export const BASE_CLAIM_SIZE = 100;
export const QUICK_EVENT_MS = 2;

export interface ClaimSizer {
  /** The limit for the next claim. */
  readonly limit: number;
  /**
   * Told of each batch once it has committed: how many events it claimed, how
   * many of them it ran (not given back), and how long the batch took.
   */
  after(batch: { claimed: number; ran: number; limit: number; elapsedMs: number }): void;
}

export function createClaimSizer(maxClaimSize: number): ClaimSizer {
  if (!Number.isSafeInteger(maxClaimSize) || maxClaimSize < 1)
    throw new RangeError(`batch size must be a positive integer, got ${maxClaimSize}`);
  const base = Math.min(BASE_CLAIM_SIZE, maxClaimSize);
  let limit = base;
  return {
    get limit() {
      return limit;
    },
    after({ claimed, ran, limit: used, elapsedMs }) {
      if (claimed === 0) return;
      if (elapsedMs > Math.max(ran, 1) * QUICK_EVENT_MS) limit = base;
      else if (claimed >= used) limit = Math.min(maxClaimSize, used * 2);
    },
  };
}

/**
 * The ranks of docs/events.md. A fact with a higher rank replaces a lower one,
 * never the reverse. Values the service may add later rank lowest (0), so they
 * are shown until a known state supersedes them.
 */
export const STATUS_RANK: Readonly<Record<string, number>> = { created: 0, live: 1, sealed: 2, withdrawn: 2 };
export const STATE_RANK: Readonly<Record<string, number>> = { pending: 0, held: 1, delivered: 2, undeliverable: 2 };

export function statusRank(status: string): number {
  return Object.hasOwn(STATUS_RANK, status) ? STATUS_RANK[status]! : 0;
}

export function stateRank(state: string): number {
  return Object.hasOwn(STATE_RANK, state) ? STATE_RANK[state]! : 0;
}

/**
 * How long the inbox keeps an event's row, defined here once: the configuration (POSTROOM_RETENTION) and
 * `postroom retention run` start from it. docs/retention.md gives the reasons.
 *
 * - 90 days by default: replay and on-call inspection (`inbox show`, the console) of a quarter's events.
 *   Nothing else needs the rows: de-duplication reads the ledger (inbox_ids), which is never dropped; the
 *   reconciler's look-back (dead deliveries 7 days before its watermark) and `audit` ask the ledger whether
 *   an event arrived; a gap's recovery looks at events received since the gap, days at most.
 * - At least 8 days: the reconciler's 7-day look-back plus the day a partition spans, so no event its
 *   next runs can still ask about is dropped, even if the ledger were not consulted.
 * - A partition holding an event that needs work or attention (received, processing, failed, dead,
 *   quarantined) is never dropped, whatever its age.
 */
export const RETENTION_DEFAULTS: {
  readonly keepDays: number;
  readonly minimumDays: number;
  readonly cron: string;
} = Object.freeze({
  keepDays: 90,
  minimumDays: 8,
  /** Every hour: keeps the next days' partitions ready, and drops a day once it is past retention. */
  cron: '7 * * * *',
});

/**
 * The reconciler's defaults, defined here once: a run's options (types.ts) start
 * from these, and the environment (config.ts) and `postroom reconcile`'s flags show
 * and override them. Kept apart so reading the configuration loads no reconciler.
 */
export const RECONCILE_DEFAULTS: {
  readonly pageSize: number;
  readonly listingPageSize: number;
  readonly overlapMs: number;
  readonly listingOverlapMs: number;
  readonly atRiskAfterMs: number;
  readonly watermarkSettleMs: number;
  readonly rereadConcurrency: number;
  readonly matchWindowMs: number;
} = Object.freeze({
  /** Deliveries asked for per page (dead, pending and delivered lists). */
  pageSize: 200,
  /** Changed files asked for per page of the correspondence listing, unless pageSize is given. */
  listingPageSize: 100,
  /** Dead deliveries created this long before the watermark are examined again. */
  overlapMs: 7 * 86_400_000,
  /** The correspondence listing is walked again from this long before its watermark. */
  listingOverlapMs: 15 * 60_000,
  /** Pending deliveries older than this are reported at risk. */
  atRiskAfterMs: 15 * 60_000,
  /** The completeness watermark stays this far behind the start of the walk that proves it (clock skew). */
  watermarkSettleMs: 60_000,
  /** Re-reads in flight. */
  rereadConcurrency: 8,
  /** How far a delivery's time may lie from the change a re-read shows. */
  matchWindowMs: 120_000,
});

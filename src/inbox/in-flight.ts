/**
 * Since migration 008 a claimed event's inbox row keeps saying `received` or
 * `failed` until its batch commits; the claim is a row in inbox_attempts.
 * Claims keep such events out through inFlight, and whatever shows an operator
 * a status (stats, gauges, list, show, replay) reads it through shownStatus,
 * so an event in a worker's hands reads as `processing` everywhere.
 * inbox_attempts holds one row per batch in flight, and Postgres hashes this
 * subquery once per statement.
 *
 * Read through its primary key (`batch_id IS NOT NULL` holds for every row).
 * The claim runs with sequential scans off, and a sequential read of this table
 * was then priced as disabled, inside the ordering check that is costed once
 * per candidate. Every plan of the claim looked disabled, the comparison
 * between them meant nothing, and the planner took a bitmap scan of the whole
 * backlog and a sort: the ordering check ran on every runnable event instead
 * of only until the claim's limit (test/worker/plans.test.ts, "steady backlog").
 */
export const inFlight = (alias = 'inbox'): string =>
  `${alias}.event_id IN (SELECT unnest(a.event_ids) FROM inbox_attempts a WHERE a.batch_id IS NOT NULL)`;

/** The status to show for a row: `processing` while its batch is in flight. */
export const shownStatus = (alias = 'inbox'): string =>
  `CASE WHEN ${alias}.status IN ('received', 'failed') AND ${inFlight(alias)} THEN 'processing' ELSE ${alias}.status END`;

-- Issue 16: a claim takes one lock instead of a lock on every event it claims.
--
-- Until now a claim locked each candidate row FOR NO KEY UPDATE SKIP LOCKED,
-- then checked the candidates again in a second statement whose snapshot
-- followed those locks, so that it saw every batch another claim had recorded
-- on them meanwhile. Claims now take turns under a transaction-level advisory
-- lock keyed by the inbox table (src/worker/claim-queries.ts): one statement,
-- whose snapshot follows the lock, reads, checks and records the batch: 0.74x
-- the claim's Postgres time per event in `serve` (docs/benchmarks.md, "Stop 57").
--
-- Workers of an earlier version claim without the turn. Beside a new worker
-- they could take an event the new worker is taking (each snapshot taken before
-- the other's batch committed) and run it twice. So a claim must now say it
-- took its turn, and an insert that does not (any earlier version) is refused
-- with a message saying why. Such a worker's claims fail (its loop logs the
-- error and retries; nothing is taken twice) until it is replaced; the batches
-- it already holds can still finish or be reaped, since only inserts are
-- checked. Migration 008 retired the 'processing' claim the same way.
ALTER TABLE inbox_attempts ADD COLUMN claimed_under_lock boolean;

CREATE FUNCTION inbox_attempts_refuse_unlocked_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a postroom worker older than migration 015 tried to claim events; claims now take turns, and this worker does not'
    USING ERRCODE = 'object_not_in_prerequisite_state',
          HINT = 'Replace every worker of an earlier postroom version (serve, serve --role worker) with this version; their claims fail until then, and nothing is lost.';
END
$$;

CREATE TRIGGER inbox_attempts_claimed_under_lock
  BEFORE INSERT ON inbox_attempts
  FOR EACH ROW WHEN (NEW.claimed_under_lock IS NOT TRUE)
  EXECUTE FUNCTION inbox_attempts_refuse_unlocked_claim();

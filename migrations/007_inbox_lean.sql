-- Issue 16: what each inbox row costs Postgres, and counts that stay cheap at any size.
--
-- Rows are not rewritten: an existing installation keeps every row, payload and
-- raw body as they are; only new rows are written the leaner way (see
-- src/inbox/insert-queries.ts: the signed bytes once, in raw_body, and payload
-- only for a row that has no raw bytes).

-- Unused since 004: the claim walks inbox_claim_order_idx and checks
-- next_attempt_at on the way. Every received row paid an insert into it.
DROP INDEX IF EXISTS inbox_runnable_idx;

-- A full (status, received_at) index over every row ever received, to list and
-- count the few rows an operator has to look at. A partial index over exactly
-- those rows serves the same listings and counts and costs nothing for the rows
-- that go straight through (received -> processing -> processed). Listings of
-- other statuses fall back to inbox_received_idx (newest first, filtered).
DROP INDEX IF EXISTS inbox_status_received_idx;
CREATE INDEX inbox_attention_idx ON inbox (status, received_at DESC) WHERE status IN ('failed', 'dead', 'quarantined');

-- How many events finished (processed or skipped), by type, without counting them:
-- those are nearly all rows and grow for ever, so count(*) over them grows with
-- the inbox (13 ms at 100k rows, 290 ms at 5M for every /metrics scrape). Every
-- other status is a bounded set that a partial index counts exactly.
--
-- Kept by the statement triggers below, whatever the writer (worker, replay, an
-- operator's UPDATE). Each transaction adds to the shard of its own backend, so
-- concurrent workers do not queue on one counter row until their commits.
-- Rows are inserted as received or quarantined only (ingress, reconciler, tests),
-- so inserts carry no trigger and the hot path pays nothing; a bulk load of
-- finished rows calls inbox_tally_rebuild() afterwards.
CREATE TABLE inbox_tally (
  type   text NOT NULL,
  status text NOT NULL,
  shard  smallint NOT NULL,
  n      bigint NOT NULL,
  PRIMARY KEY (type, status, shard),
  CONSTRAINT inbox_tally_status_check CHECK (status IN ('processed', 'skipped'))
);

CREATE FUNCTION inbox_tally_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM inbox_tally;
    RETURN NULL;
  END IF;
  INSERT INTO inbox_tally AS t (type, status, shard, n)
  SELECT d.type, d.status, (pg_backend_pid() % 16)::smallint, sum(d.delta)
  FROM (
    SELECT type, status, 1 AS delta FROM tally_new WHERE status IN ('processed', 'skipped')
    UNION ALL
    SELECT type, status, -1 AS delta FROM tally_old WHERE status IN ('processed', 'skipped')
  ) d
  GROUP BY d.type, d.status
  HAVING sum(d.delta) <> 0
  ON CONFLICT (type, status, shard) DO UPDATE SET n = t.n + excluded.n;
  RETURN NULL;
END
$$;

CREATE FUNCTION inbox_tally_apply_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO inbox_tally AS t (type, status, shard, n)
  SELECT type, status, (pg_backend_pid() % 16)::smallint, -count(*)
  FROM tally_old WHERE status IN ('processed', 'skipped')
  GROUP BY type, status
  ON CONFLICT (type, status, shard) DO UPDATE SET n = t.n + excluded.n;
  RETURN NULL;
END
$$;

CREATE TRIGGER inbox_tally_update AFTER UPDATE ON inbox
  REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply();
CREATE TRIGGER inbox_tally_delete AFTER DELETE ON inbox
  REFERENCING OLD TABLE AS tally_old
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply_delete();
CREATE TRIGGER inbox_tally_truncate AFTER TRUNCATE ON inbox
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply();

-- Recount from the rows (one full scan; writers wait meanwhile so none is lost).
-- For after a bulk load, or to check the tally: it must change nothing.
CREATE FUNCTION inbox_tally_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE inbox IN SHARE MODE;
  DELETE FROM inbox_tally;
  INSERT INTO inbox_tally (type, status, shard, n)
  SELECT type, status, 0, count(*) FROM inbox WHERE status IN ('processed', 'skipped') GROUP BY type, status;
END
$$;

SELECT inbox_tally_rebuild();

-- The counters kept by triggers, inbox_tally (007) and inbox_minutes (022), are sharded so that concurrent
-- writers do not queue on one row. Their shard was pg_backend_pid() % 16, so two live backends whose pids agree
-- modulo 16 shared a row, and the second writer waited on the first's row lock until the first transaction ended.
-- A flush whose connection hung after its statement had run (a stopped backend; a network path gone silent)
-- therefore held up every flush of the backends on its shard, beyond the ids it holds (flush-locks.ts), and each
-- connection abandoned at the ack budget was replaced by a new backend, whose pid could land on that shard again.
-- The same held up a worker finishing events of one type behind a worker transaction left open.
--
-- Now a transaction takes its shard with a transaction-level advisory lock that it only ever tries: the first
-- shard, starting from pid % 16, that no other transaction holds. A counter row is written only by the one
-- transaction holding its shard, so no counter write waits on another. Shards from 16 on are taken only while
-- more than 16 transactions are counting at once: the rows stay bounded by the writers that ever overlapped.
-- The lock keys are two int4s, a hash of the schema and the shard: a key space apart from the single-bigint
-- locks taken by name (advisory-key.ts), and from the flush locks' keys but for a chance of 16 in 2^64 per id.
--
-- Pruning old minutes skips rows another transaction is already deleting rather than waiting on it.

CREATE FUNCTION inbox_counts_shard() RETURNS smallint LANGUAGE plpgsql AS $$
DECLARE
  schema_key int4 := hashtext(current_schema() || '.inbox_counts');
  base int := pg_backend_pid() % 16;
  s int;
BEGIN
  FOR i IN 0..15 LOOP
    s := (base + i) % 16;
    IF pg_try_advisory_xact_lock(schema_key, s) THEN
      RETURN s;
    END IF;
  END LOOP;
  s := 16;
  LOOP
    IF pg_try_advisory_xact_lock(schema_key, s) THEN
      RETURN s;
    END IF;
    s := s + 1;
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION inbox_tally_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counts_shard smallint;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM inbox_tally;
    RETURN NULL;
  END IF;
  counts_shard := inbox_counts_shard();
  INSERT INTO inbox_tally AS t (type, status, shard, n)
  SELECT d.type, d.status, counts_shard, sum(d.delta)
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

CREATE OR REPLACE FUNCTION inbox_tally_apply_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  counts_shard smallint := inbox_counts_shard();
BEGIN
  INSERT INTO inbox_tally AS t (type, status, shard, n)
  SELECT type, status, counts_shard, -count(*)
  FROM tally_old WHERE status IN ('processed', 'skipped')
  GROUP BY type, status
  ON CONFLICT (type, status, shard) DO UPDATE SET n = t.n + excluded.n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION inbox_minutes_add(counts_kind text, minutes timestamptz[], ns bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  counts_shard smallint := inbox_counts_shard();
  fresh boolean;
BEGIN
  WITH upserted AS (
    INSERT INTO inbox_minutes AS m (minute, kind, shard, n)
    SELECT u.minute, counts_kind, counts_shard, u.n FROM unnest(minutes, ns) AS u(minute, n)
    ON CONFLICT (minute, kind, shard) DO UPDATE SET n = m.n + excluded.n
    RETURNING (xmax = 0) AS inserted
  )
  SELECT bool_or(inserted) INTO fresh FROM upserted;
  IF fresh THEN
    DELETE FROM inbox_minutes
    WHERE (minute, kind, shard) IN (
      SELECT o.minute, o.kind, o.shard FROM inbox_minutes o
      WHERE o.minute < now() - interval '3 days'
      FOR UPDATE SKIP LOCKED
    );
  END IF;
END
$$;

-- Each function carries the search_path of the schema it lives in (009, 022): CREATE OR REPLACE clears it.
DO $$
DECLARE
  fn text;
  home text;
BEGIN
  FOREACH fn IN ARRAY ARRAY['inbox_counts_shard()', 'inbox_tally_apply()', 'inbox_tally_apply_delete()',
                            'inbox_minutes_add(text,timestamptz[],bigint[])'] LOOP
    SELECT n.nspname INTO home FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = fn::regprocedure;
    EXECUTE format('ALTER FUNCTION %I.%s SET search_path = %I, pg_temp', home, fn, home);
  END LOOP;
END
$$;

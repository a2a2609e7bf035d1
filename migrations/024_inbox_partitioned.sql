-- The inbox becomes a history partitioned by day of receipt, so that retention drops whole days
-- (`postroom retention run`: DETACH then DROP, no row rewritten, no bloat left) instead of rewriting
-- rows, and so that the work queue's partial indexes live in the few recent partitions that hold work.
--
-- De-duplication no longer rests on the inbox: the ledger (migration 023) holds every id for ever, and a
-- flush writes a row here only for an id the ledger took (src/inbox/insert-queries.ts). `postroom
-- migrate` fills the ledger from the existing rows before applying this (src/inbox/layout-migration.ts).
--
-- What happens here, in one transaction of catalogue changes and a bounded copy:
--   1. the existing table becomes inbox_unpartitioned, and loses its triggers and, once its rows that
--      need work are moved, every index but the one by receipt time;
--   2. the partitioned inbox is created with the same columns, constraints, indexes and triggers, and one
--      partition for each UTC day the existing rows were received on, and for today and the next 3;
--   3. the rows that still need work or attention (received, processing, failed, dead, quarantined; found
--      through their partial indexes) move at once, so workers and operators see them throughout;
--   4. the finished rows move afterwards in batches (inbox_unpartitioned_move, called by `postroom
--      migrate` until none is left, with ingress running), then inbox_unpartitioned is dropped.
--
-- received_at has no default here: this version's writers set it to the instant the ledger recorded.
-- A writer of an earlier version, which leaves it to the default and knows nothing of the ledger, is
-- refused (not-null violation; its request is answered 5xx and the service retries it against an
-- upgraded replica), so no id can reach the history without passing the ledger (docs/retention.md,
-- "Upgrading").
DROP TRIGGER inbox_ids_insert ON inbox;
DROP TRIGGER inbox_ids_update ON inbox;
DROP FUNCTION inbox_ids_record();
DROP TRIGGER inbox_tally_update ON inbox;
DROP TRIGGER inbox_tally_delete ON inbox;
DROP TRIGGER inbox_tally_truncate ON inbox;
DROP TRIGGER inbox_minutes_insert ON inbox;
DROP TRIGGER inbox_minutes_update ON inbox;
ALTER TABLE inbox RENAME TO inbox_unpartitioned;
ALTER TABLE inbox_unpartitioned DROP CONSTRAINT inbox_event_id_excl;
ALTER INDEX inbox_received_idx RENAME TO inbox_unpartitioned_received_idx;
ALTER INDEX inbox_attention_idx RENAME TO inbox_unpartitioned_attention_idx;
ALTER INDEX inbox_unfinished_idx RENAME TO inbox_unpartitioned_unfinished_idx;
DROP INDEX inbox_claim_order_idx;
DROP INDEX inbox_correspondence_idx;
DROP INDEX inbox_lease_idx;
DROP INDEX inbox_ordering_idx;

CREATE TABLE inbox (
  event_id              text NOT NULL,
  type                  text NOT NULL,
  occurred_at           timestamptz,
  received_at           timestamptz NOT NULL,
  payload               jsonb,
  raw_body              bytea,
  signature_header      text,
  headers               jsonb,
  endpoint_id           text,
  source                text NOT NULL DEFAULT 'webhook',
  correspondence_id     text,
  secret_index          smallint,
  status                text NOT NULL DEFAULT 'received',
  attempts              integer NOT NULL DEFAULT 0,
  next_attempt_at       timestamptz NOT NULL DEFAULT now(),
  locked_by             text,
  locked_until          timestamptz,
  last_error            text,
  processed_at          timestamptz,
  pruned_at             timestamptz,
  delivery_content_type text,
  delivery_user_agent   text,
  CONSTRAINT inbox_status_check CHECK (status IN ('received', 'processing', 'processed', 'failed', 'dead', 'skipped', 'quarantined')),
  CONSTRAINT inbox_source_check CHECK (source IN ('webhook', 'reconciler', 'replay'))
) PARTITION BY RANGE (received_at);

-- One partition per UTC day, named inbox_pYYYYMMDD (src/inbox/partitions.ts reads the day from the name).
CREATE FUNCTION inbox_partition_create(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  name text := 'inbox_p' || to_char(day, 'YYYYMMDD');
BEGIN
  IF to_regclass(name) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I PARTITION OF inbox FOR VALUES FROM (%L) TO (%L)', name,
                 (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
  RETURN true;
END
$$;

-- Today's partition and the next `ahead` days' (UTC), so ingress never meets a missing one; returns how
-- many it created. The leader calls it with every retention run, `migrate` and `serve` at start, and a
-- flush that meets a missing partition calls it before retrying (src/inbox/group-commit.ts).
CREATE FUNCTION inbox_partitions_ensure(ahead integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  created integer := 0;
BEGIN
  FOR i IN 0..ahead LOOP
    IF inbox_partition_create(today + i) THEN
      created := created + 1;
    END IF;
  END LOOP;
  RETURN created;
END
$$;

-- Moves the `batch` earliest received rows left in inbox_unpartitioned into the history, in one
-- statement (the rows leave one table and enter the other in the same transaction); returns how many.
-- The console's per-minute rollup already counted these rows when they were first received: the counts
-- the insert trigger adds for them are taken back.
CREATE FUNCTION inbox_unpartitioned_move(batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  moved integer;
  minutes timestamptz[];
  ns bigint[];
BEGIN
  WITH taken AS (
    DELETE FROM inbox_unpartitioned
    WHERE ctid = ANY (ARRAY(SELECT ctid FROM inbox_unpartitioned ORDER BY received_at LIMIT batch))
    RETURNING *
  ), put AS (
    INSERT INTO inbox (event_id, type, occurred_at, received_at, payload, raw_body, signature_header, headers,
                       endpoint_id, source, correspondence_id, secret_index, status, attempts, next_attempt_at,
                       locked_by, locked_until, last_error, processed_at, pruned_at, delivery_content_type,
                       delivery_user_agent)
    SELECT event_id, type, occurred_at, received_at, payload, raw_body, signature_header, headers,
           endpoint_id, source, correspondence_id, secret_index, status, attempts, next_attempt_at,
           locked_by, locked_until, last_error, processed_at, pruned_at, delivery_content_type,
           delivery_user_agent
    FROM taken
    RETURNING received_at
  ), recent AS (
    SELECT date_trunc('minute', received_at) AS minute, count(*) AS n FROM put
    WHERE received_at >= now() - interval '3 days' GROUP BY 1
  )
  SELECT (SELECT count(*) FROM put), (SELECT array_agg(minute) FROM recent), (SELECT array_agg(-n) FROM recent)
    INTO moved, minutes, ns;
  IF minutes IS NOT NULL THEN
    PERFORM inbox_minutes_add('received', minutes, ns);
  END IF;
  RETURN moved;
END
$$;

DO $$
DECLARE
  fn text;
  home text;
BEGIN
  FOREACH fn IN ARRAY ARRAY['inbox_partition_create(date)', 'inbox_partitions_ensure(integer)', 'inbox_unpartitioned_move(integer)'] LOOP
    SELECT n.nspname INTO home FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = fn::regprocedure;
    EXECUTE format('ALTER FUNCTION %I.%s SET search_path = %I, pg_temp', home, fn, home);
  END LOOP;
END
$$;

-- A partition for every day the existing rows were received on (one probe of the receipt index per day).
DO $$
DECLARE
  day date := (SELECT (min(received_at) AT TIME ZONE 'UTC')::date FROM inbox_unpartitioned);
BEGIN
  WHILE day IS NOT NULL LOOP
    PERFORM inbox_partition_create(day);
    day := (SELECT (min(received_at) AT TIME ZONE 'UTC')::date FROM inbox_unpartitioned
            WHERE received_at >= ((day + 1)::timestamp AT TIME ZONE 'UTC'));
  END LOOP;
END
$$;
SELECT inbox_partitions_ensure(3);

-- The rows that need work or an operator's attention, through the partial indexes that list them.
INSERT INTO inbox SELECT event_id, type, occurred_at, received_at, payload, raw_body, signature_header, headers,
       endpoint_id, source, correspondence_id, secret_index, status, attempts, next_attempt_at, locked_by,
       locked_until, last_error, processed_at, pruned_at, delivery_content_type, delivery_user_agent
  FROM inbox_unpartitioned WHERE status IN ('received', 'processing', 'failed');
DELETE FROM inbox_unpartitioned WHERE status IN ('received', 'processing', 'failed');
INSERT INTO inbox SELECT event_id, type, occurred_at, received_at, payload, raw_body, signature_header, headers,
       endpoint_id, source, correspondence_id, secret_index, status, attempts, next_attempt_at, locked_by,
       locked_until, last_error, processed_at, pruned_at, delivery_content_type, delivery_user_agent
  FROM inbox_unpartitioned WHERE status IN ('dead', 'quarantined');
DELETE FROM inbox_unpartitioned WHERE status IN ('dead', 'quarantined');
-- Workers older than migration 008 stay refused (see 008); rows already moved keep their status.
ALTER TABLE inbox ADD CONSTRAINT inbox_processing_retired CHECK (status <> 'processing') NOT VALID;
DROP INDEX inbox_unpartitioned_attention_idx;
DROP INDEX inbox_unpartitioned_unfinished_idx;

-- The indexes of before, on every partition (partitioned indexes: a new partition gets them on creation).
CREATE INDEX inbox_claim_order_idx ON inbox (occurred_at, event_id COLLATE "C") WHERE status IN ('received', 'failed');
CREATE INDEX inbox_lease_idx ON inbox (locked_until) WHERE status = 'processing';
CREATE INDEX inbox_ordering_idx ON inbox (correspondence_id, occurred_at) WHERE status IN ('received', 'processing', 'failed');
CREATE INDEX inbox_unfinished_idx ON inbox (received_at) WHERE status IN ('received', 'processing', 'failed');
CREATE INDEX inbox_attention_idx ON inbox (status, received_at DESC) WHERE status IN ('failed', 'dead', 'quarantined');
CREATE INDEX inbox_received_idx ON inbox (received_at);
CREATE INDEX inbox_correspondence_idx ON inbox (correspondence_id, received_at) WHERE correspondence_id IS NOT NULL;
-- Lookups by id within the one partition the ledger names; uniqueness is the ledger's.
CREATE INDEX inbox_event_id_idx ON inbox USING hash (event_id);

-- The tally (007) and the console's per-minute rollup (022), as statement triggers on the partitioned table.
CREATE TRIGGER inbox_tally_update AFTER UPDATE ON inbox
  REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply();
CREATE TRIGGER inbox_tally_delete AFTER DELETE ON inbox
  REFERENCING OLD TABLE AS tally_old
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply_delete();
CREATE TRIGGER inbox_tally_truncate AFTER TRUNCATE ON inbox
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_tally_apply();
CREATE TRIGGER inbox_minutes_insert AFTER INSERT ON inbox
  REFERENCING NEW TABLE AS minutes_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_minutes_received();
CREATE TRIGGER inbox_minutes_update AFTER UPDATE ON inbox
  REFERENCING OLD TABLE AS minutes_old NEW TABLE AS minutes_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_minutes_finished();

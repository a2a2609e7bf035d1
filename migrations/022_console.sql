-- The on-call console (src/console): what it needs from the store, and nothing on a hot path beyond one
-- statement-level trigger per flush.

-- Events received and finished per minute, for the console's charts: counting them from the inbox would
-- read every row of the window. Kept by statement-level triggers (one aggregate upsert per flush or per
-- finished batch, whatever the writer), sharded by backend like inbox_tally so concurrent writers do not
-- queue on one row, and pruned by the writers themselves: the first row of a new minute deletes what is
-- older than three days. Statement-level triggers with transition tables also work on a partitioned inbox.
CREATE TABLE inbox_minutes (
  minute timestamptz NOT NULL,
  kind   text NOT NULL,
  shard  smallint NOT NULL,
  n      bigint NOT NULL,
  PRIMARY KEY (minute, kind, shard),
  CONSTRAINT inbox_minutes_kind_check CHECK (kind IN ('received', 'finished'))
);

CREATE FUNCTION inbox_minutes_add(counts_kind text, minutes timestamptz[], ns bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  fresh boolean;
BEGIN
  WITH upserted AS (
    INSERT INTO inbox_minutes AS m (minute, kind, shard, n)
    SELECT u.minute, counts_kind, (pg_backend_pid() % 16)::smallint, u.n FROM unnest(minutes, ns) AS u(minute, n)
    ON CONFLICT (minute, kind, shard) DO UPDATE SET n = m.n + excluded.n
    RETURNING (xmax = 0) AS inserted
  )
  SELECT bool_or(inserted) INTO fresh FROM upserted;
  IF fresh THEN
    DELETE FROM inbox_minutes WHERE minute < now() - interval '3 days';
  END IF;
END
$$;

CREATE FUNCTION inbox_minutes_received() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  minutes timestamptz[];
  ns bigint[];
BEGIN
  SELECT array_agg(minute), array_agg(n) INTO minutes, ns
  FROM (
    SELECT date_trunc('minute', received_at) AS minute, count(*) AS n FROM minutes_new
    WHERE received_at >= now() - interval '3 days' GROUP BY 1
  ) c;
  IF minutes IS NOT NULL THEN
    PERFORM inbox_minutes_add('received', minutes, ns);
  END IF;
  RETURN NULL;
END
$$;

-- Finished (processed or skipped) by the minute of processed_at, as the tally counts them: +1 for each row
-- that is finished after the statement, -1 for each that was before, so a statement that rewrites finished
-- rows (prune) adds nothing.
CREATE FUNCTION inbox_minutes_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  minutes timestamptz[];
  ns bigint[];
BEGIN
  SELECT array_agg(minute), array_agg(n) INTO minutes, ns
  FROM (
    SELECT minute, sum(delta) AS n FROM (
      SELECT date_trunc('minute', processed_at) AS minute, 1 AS delta FROM minutes_new
      WHERE status IN ('processed', 'skipped') AND processed_at IS NOT NULL
      UNION ALL
      SELECT date_trunc('minute', processed_at), -1 FROM minutes_old
      WHERE status IN ('processed', 'skipped') AND processed_at IS NOT NULL
    ) d
    WHERE minute >= now() - interval '3 days'
    GROUP BY minute HAVING sum(delta) <> 0
  ) c;
  IF minutes IS NOT NULL THEN
    PERFORM inbox_minutes_add('finished', minutes, ns);
  END IF;
  RETURN NULL;
END
$$;

-- The functions carry the search_path of the schema they live in, as the tally's do: an UPDATE of the inbox
-- from a session whose search_path does not name it (psql, an application sharing the database) still works.
DO $$
DECLARE
  fn text;
  home text;
BEGIN
  FOREACH fn IN ARRAY ARRAY['inbox_minutes_add(text,timestamptz[],bigint[])', 'inbox_minutes_received()', 'inbox_minutes_finished()'] LOOP
    SELECT n.nspname INTO home FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = fn::regprocedure;
    EXECUTE format('ALTER FUNCTION %I.%s SET search_path = %I, pg_temp', home, fn, home);
  END LOOP;
END
$$;

CREATE TRIGGER inbox_minutes_insert AFTER INSERT ON inbox
  REFERENCING NEW TABLE AS minutes_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_minutes_received();
CREATE TRIGGER inbox_minutes_update AFTER UPDATE ON inbox
  REFERENCING OLD TABLE AS minutes_old NEW TABLE AS minutes_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_minutes_finished();

-- A correspondence's events, newest received first (the console's timeline and its inbox filter). Partial:
-- events that name no correspondence (wallet, campaign) cost it nothing. Built here under a lock that holds
-- inserts back (seconds at ten million rows); to avoid that wait, build it beforehand with
-- `CREATE INDEX CONCURRENTLY inbox_correspondence_idx ON <schema>.inbox (correspondence_id, received_at)
-- WHERE correspondence_id IS NOT NULL` (docs/console.md), and this keeps it.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('inbox_correspondence_idx') AND indisvalid) THEN
    DROP INDEX IF EXISTS inbox_correspondence_idx;
    CREATE INDEX inbox_correspondence_idx ON inbox (correspondence_id, received_at) WHERE correspondence_id IS NOT NULL;
  END IF;
END
$$;

-- Gaps of one status, newest first, a page at a time (the console's gaps view).
CREATE INDEX reconcile_gaps_status_id_idx ON reconcile_gaps (status, gap_id);
-- The gaps of one correspondence (the console's timeline).
CREATE INDEX reconcile_gaps_correspondence_idx ON reconcile_gaps (correspondence_id) WHERE correspondence_id IS NOT NULL;

-- What operators did in the console: who, when, what, how many. Never updated except to record how an action
-- that runs on (a reconcile) ended.
CREATE TABLE console_audit (
  audit_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  actor       text NOT NULL,
  role        text NOT NULL,
  -- token (a line of the tokens file), proxy (the trusted user header), local (`postroom console` on this machine)
  via         text NOT NULL,
  action      text NOT NULL,
  -- the event id, gap id or filter the action was about
  target      text,
  -- how many events or gaps it changed
  affected    integer,
  detail      jsonb NOT NULL DEFAULT '{}'::jsonb,
  finished_at timestamptz,
  CONSTRAINT console_audit_action_check CHECK (action IN ('replay_event', 'replay_matching', 'ignore_gap', 'reconcile', 'reveal')),
  CONSTRAINT console_audit_via_check CHECK (via IN ('token', 'proxy', 'local'))
);

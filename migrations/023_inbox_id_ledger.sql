-- A permanent, narrow ledger of every event id ever stored: what de-duplicates a redelivery, for ever.
--
-- The inbox's own rows de-duplicated until now, so no row could ever be dropped. The history moves to a
-- table partitioned by day of receipt (migration 024), and whole partitions are dropped once retention
-- allows (`postroom retention run`). A unique key on a partitioned table must include the partition key,
-- so it would only stop a duplicate received the same day: a redelivery of an event whose partition is
-- gone would be stored and processed again. Ids therefore live here, keyed by the id alone, with the
-- instant the event was received: a lookup by id reads the instant here and then touches the one
-- partition that can hold the row.
--
-- The id is unique through an exclusion constraint over a hash index, as the inbox's was (migration 012:
-- ids are random, and a B-tree over them writes a random leaf page per id, a full page image in the WAL
-- after every checkpoint; the hash index stores 4 bytes of hash code per id). INSERT ... ON CONFLICT DO
-- NOTHING honours it, which is how a flush learns which of its ids are new (src/inbox/insert-queries.ts).
CREATE TABLE inbox_ids (
  event_id    text NOT NULL,
  received_at timestamptz NOT NULL,
  CONSTRAINT inbox_ids_event_id_excl EXCLUDE USING hash (event_id WITH =)
);

-- Until the history moves (migration 024), every id written to the inbox by any writer (a replica of an
-- earlier version, an operator's INSERT) lands here too, and so does every row an UPDATE moves: `postroom
-- migrate` then fills the ledger from the existing rows, a range of pages at a time, with ingress
-- running; a row is either still where the walk finds it or was moved by an UPDATE, which this records
-- (src/inbox/layout-migration.ts). Migration 024 removes both triggers.
CREATE FUNCTION inbox_ids_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO inbox_ids (event_id, received_at) SELECT event_id, received_at FROM ids_new ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;

DO $$
DECLARE
  home text;
BEGIN
  SELECT n.nspname INTO home FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = 'inbox_ids_record()'::regprocedure;
  EXECUTE format('ALTER FUNCTION %I.inbox_ids_record() SET search_path = %I, pg_temp', home, home);
END
$$;

CREATE TRIGGER inbox_ids_insert AFTER INSERT ON inbox
  REFERENCING NEW TABLE AS ids_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_ids_record();
CREATE TRIGGER inbox_ids_update AFTER UPDATE ON inbox
  REFERENCING NEW TABLE AS ids_new
  FOR EACH STATEMENT EXECUTE FUNCTION inbox_ids_record();

-- Issue 16: the index of every event by receipt time, ascending instead of descending.
--
-- inbox_received_idx (001) sorted received_at descending, so each new event, the
-- latest, went to the index's first leaf page. Postgres packs a page that splits at
-- the right-hand end of an index (90% full, the rising-key case it expects) but
-- splits any other page in half, and a page left of the newest key is never written
-- again: every page of this index stayed half empty. Measured with pgstatindex after
-- 20,000 flushes of 32 rows: 50% leaf density descending against 89% ascending,
-- 8.5 MB against 4.7 MB (25 MB against 14 MB when every row has its own time). It
-- covers every row ever received, so at ten million events that is some 60 to
-- 170 MB of index kept, vacuumed and backed up for nothing.
--
-- Every reader still finds its order: newest-first listings scan it backwards, the
-- receipt-order walks (prune, replay) forwards. The name stays.
--
-- Built here under a lock that holds inserts back (seconds at ten million rows:
-- ingress answers 503 meanwhile and the service retries). To avoid that wait, build
-- it beforehand with `CREATE INDEX CONCURRENTLY inbox_received_asc_idx ON
-- <schema>.inbox (received_at)`; this migration then only swaps the names
-- (docs/runbook.md, "Upgrading across migration 014"). An index of that name that
-- is not exactly this one (a concurrent build that failed leaves an invalid index;
-- a typo can leave another key, order, predicate or a unique index, which would
-- refuse a flush's rows, all received at one instant) is dropped and built again here.
DO $$
DECLARE
  ready boolean;
BEGIN
  SELECT i.indisvalid AND NOT i.indisunique AND i.indrelid = to_regclass('inbox') AND am.amname = 'btree' AND i.indnatts = 1
         AND i.indkey[0] = (SELECT attnum FROM pg_attribute WHERE attrelid = i.indrelid AND attname = 'received_at')
         AND i.indoption[0] = 0 AND i.indpred IS NULL AND i.indexprs IS NULL
    INTO ready
  FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am am ON am.oid = c.relam
  WHERE i.indexrelid = to_regclass('inbox_received_asc_idx');
  IF ready IS NOT TRUE THEN
    DROP INDEX IF EXISTS inbox_received_asc_idx;
    CREATE INDEX inbox_received_asc_idx ON inbox (received_at);
  END IF;
END
$$;
DROP INDEX inbox_received_idx;
ALTER INDEX inbox_received_asc_idx RENAME TO inbox_received_idx;

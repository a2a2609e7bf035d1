-- Issue 16: a claim no longer rewrites the inbox rows it takes.
--
-- Until now a claim set each row to 'processing' with its attempt counted: a
-- whole new version of a wide row, with entries in five indexes and a capture
-- by the tally trigger, then locked again by the batch and rewritten once more
-- when it finished. The claim is now one narrow row per batch, here, committed
-- before any handler runs, so an event that kills its worker still counts the
-- attempt. The batch's own transaction deletes this row first thing and holds
-- it locked while the handlers run; its commit writes each event's outcome and
-- its counted attempt, and the row's deletion, together.
--
-- So a row here that nobody holds locked belongs to a worker that stopped
-- between its claim and its commit. Its events stay out of every claim until
-- the row is older than the lease, then the reaper counts the attempt on each
-- unfinished event (failed, or dead at the limit) and deletes the row: the lease
-- of before, kept on a batch rather than on every event.
CREATE TABLE inbox_attempts (
  batch_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  worker_id  text NOT NULL,
  event_ids  text[] NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now()
);

-- Workers of an earlier version claim by setting 'processing', and they know
-- nothing of the table above: during a rolling upgrade they could take an
-- event that a new worker is running. This makes their claims fail (the loop
-- logs the error and retries; nothing is taken twice) until they are replaced,
-- while the rows they already hold can still finish or be reaped: the check
-- applies only to row versions written from now on, and every way out of
-- 'processing' leads to another status.
ALTER TABLE inbox ADD CONSTRAINT inbox_processing_retired CHECK (status <> 'processing') NOT VALID;
